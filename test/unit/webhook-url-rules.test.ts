/**
 * The webhook URL rules on address literals (no lookup, no connection): every special-purpose range of
 * the IANA IPv4 and IPv6 registries is refused, and so is every IPv6 form that embeds an IPv4 address
 * other than the plain mapped one, which is judged as the IPv4 address it is. Only genuinely public
 * addresses pass; nothing here connects anywhere.
 */
import { describe, expect, it } from 'vitest';
import { checkWebhookUrl } from '../../shared/webhooks/url-rules.js';

const hostOf = (address: string) => (address.includes(':') ? `[${address}]` : address);
const urlOf = (address: string) => `https://${hostOf(address)}/hook`;

describe('webhook URL rules', () => {
  it.each([
    // IPv4 special-purpose registry.
    ['0.0.0.0', 'webhookUrlReserved'],
    ['0.1.2.3', 'webhookUrlReserved'],
    ['10.1.2.3', 'webhookUrlPrivate'],
    ['100.64.0.1', 'webhookUrlShared'],
    ['127.0.0.1', 'webhookUrlLoopback'],
    ['169.254.10.1', 'webhookUrlLinkLocal'],
    ['169.254.169.254', 'webhookUrlMetadata'],
    ['172.16.0.1', 'webhookUrlPrivate'],
    ['192.0.0.8', 'webhookUrlReserved'],
    ['192.0.0.170', 'webhookUrlReserved'],
    ['192.0.2.10', 'webhookUrlReserved'],
    ['192.31.196.1', 'webhookUrlReserved'],
    ['192.52.193.1', 'webhookUrlReserved'],
    ['192.88.99.1', 'webhookUrlReserved'],
    ['192.168.0.10', 'webhookUrlPrivate'],
    ['192.175.48.1', 'webhookUrlReserved'],
    ['198.18.0.1', 'webhookUrlReserved'],
    ['198.19.255.254', 'webhookUrlReserved'],
    ['198.51.100.7', 'webhookUrlReserved'],
    ['203.0.113.10', 'webhookUrlReserved'],
    ['224.0.0.1', 'webhookUrlMulticast'],
    ['240.0.0.1', 'webhookUrlReserved'],
    ['255.255.255.255', 'webhookUrlReserved'],
    // IPv6 special-purpose registry, and the deprecated ranges it no longer lists.
    ['::', 'webhookUrlReserved'],
    ['::1', 'webhookUrlLoopback'],
    ['64:ff9b::808:808', 'webhookUrlReserved'],
    ['64:ff9b:1::a00:1', 'webhookUrlReserved'],
    ['100::1', 'webhookUrlReserved'],
    ['100:0:0:1::1', 'webhookUrlReserved'],
    ['2001::1', 'webhookUrlReserved'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'webhookUrlReserved'],
    ['2001:1::1', 'webhookUrlReserved'],
    ['2001:2::1', 'webhookUrlReserved'],
    ['2001:3::1', 'webhookUrlReserved'],
    ['2001:4:112::1', 'webhookUrlReserved'],
    ['2001:20::1', 'webhookUrlReserved'],
    ['2001:30::1', 'webhookUrlReserved'],
    ['2001:db8::1', 'webhookUrlReserved'],
    ['2002:a00:1::1', 'webhookUrlReserved'],
    ['2002:808:808::1', 'webhookUrlReserved'],
    ['2620:4f:8000::1', 'webhookUrlReserved'],
    ['3fff::1', 'webhookUrlReserved'],
    ['5f00::1', 'webhookUrlReserved'],
    ['fc00::1', 'webhookUrlPrivate'],
    ['fd12::1', 'webhookUrlPrivate'],
    ['fd00:ec2::254', 'webhookUrlMetadata'],
    ['fe80::1', 'webhookUrlLinkLocal'],
    ['fec0::1', 'webhookUrlReserved'],
    ['ff02::1', 'webhookUrlMulticast'],
    // IPv4 inside IPv6: mapped (dotted and hex), compatible, SIIT.
    ['::ffff:10.0.0.1', 'webhookUrlPrivate'],
    ['::ffff:a00:1', 'webhookUrlPrivate'],
    ['::ffff:127.0.0.1', 'webhookUrlLoopback'],
    ['::ffff:169.254.169.254', 'webhookUrlMetadata'],
    ['::ffff:198.18.0.1', 'webhookUrlReserved'],
    ['::127.0.0.1', 'webhookUrlReserved'],
    ['::10.0.0.1', 'webhookUrlReserved'],
    ['::8.8.8.8', 'webhookUrlReserved'],
    ['::ffff:0:10.0.0.1', 'webhookUrlReserved'],
    ['::ffff:0:127.0.0.1', 'webhookUrlReserved'],
  ])('refuses %s (%s)', async (address, rule) => {
    await expect(checkWebhookUrl(urlOf(address), false)).rejects.toMatchObject({ status: 400, messageKey: rule });
  });

  it.each(['8.8.8.8', '1.1.1.1', '9.9.9.9', '151.101.1.69', '::ffff:8.8.8.8', '2606:4700::1111', '2001:4860:4860::8888', '2a00:1450:4001:80b::200e'])(
    'accepts the public address %s',
    async (address) => {
      await expect(checkWebhookUrl(urlOf(address), false)).resolves.toBeUndefined();
    },
  );

  it('allows loopback only when told, and plain http to loopback only', async () => {
    await expect(checkWebhookUrl('http://127.0.0.1:9/hook', true)).resolves.toBeUndefined();
    await expect(checkWebhookUrl('http://[::1]:9/hook', true)).resolves.toBeUndefined();
    await expect(checkWebhookUrl('http://8.8.8.8/hook', true)).rejects.toMatchObject({ messageKey: 'webhookUrlNotHttps' });
    await expect(checkWebhookUrl('https://[::127.0.0.1]/hook', true)).rejects.toMatchObject({ messageKey: 'webhookUrlReserved' });
    await expect(checkWebhookUrl('https://10.0.0.1/hook', true)).rejects.toMatchObject({ messageKey: 'webhookUrlPrivate' });
  });
});
