/** Webhook signatures, checked with the Standard Webhooks reference library as a receiver would. */
import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { newSecret, signedHeaders } from '../../../shared/webhooks/signing.js';

describe('webhook signing', () => {
  it('makes secrets of whsec_ and the base64 of 32 random bytes, each new', () => {
    const secret = newSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(newSecret()).not.toBe(secret);
  });

  it('signs id, timestamp and body so that the reference library verifies it', () => {
    const secret = newSecret();
    const body = '{"type":"project.created"}';
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = signedHeaders([secret], 'evt_1', timestamp, body);
    expect(headers['webhook-id']).toBe('evt_1');
    expect(headers['webhook-timestamp']).toBe(String(timestamp));
    expect(new Webhook(secret).verify(body, headers)).toEqual({ type: 'project.created' });
  });

  it('gives the known signature of a known secret, and one signature per secret, space-separated', () => {
    const first = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
    const second = `whsec_${Buffer.alloc(32, 2).toString('base64')}`;
    const headers = signedHeaders([first, second], 'msg_1', 1_700_000_000, 'body');
    const signatures = headers['webhook-signature']!.split(' ');
    expect(signatures).toHaveLength(2);
    expect(signatures[0]).toBe(signedHeaders([first], 'msg_1', 1_700_000_000, 'body')['webhook-signature']);
    expect(signatures[0]).toBe('v1,IIKeeIRbL+s7mrkTdLZStRfRrRyvNJWGTBprxPbw22U=');
    expect(signatures[1]).not.toBe(signatures[0]);
  });
});
