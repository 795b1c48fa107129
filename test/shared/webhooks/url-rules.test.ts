/**
 * The webhook URL rules against server-side request forgery, in process: each refused range at its
 * edges; every special-purpose range of the IANA IPv4 and IPv6 registries, and every IPv6 form that
 * embeds an IPv4 address other than the plain mapped one (judged as the IPv4 address it is); the URL's
 * form; and the addresses a host name stands for (localhost is resolved by this machine, no network
 * needed). "Public" addresses here are real public ones, never documentation ranges; nothing connects anywhere.
 */
import { describe, expect, it } from 'vitest';
import { MAX_WEBHOOK_URL_LENGTH } from '../../../shared/schemas/webhooks.js';
import type { ResolvedAddress } from '../../../shared/webhooks/url-rules.js';

/**
 * The module, imported inside each test: a range table that fails to build then fails the tests
 * (a test file that cannot load at all runs no test, and a mutation run would count that as passing).
 */
const rules = () => import('../../../shared/webhooks/url-rules.js');

const v4 = (address: string) => ({ address, family: 4 as const });
const v6 = (address: string) => ({ address, family: 6 as const });
const urlOf = (address: string) => `https://${address.includes(':') ? `[${address}]` : address}/hook`;

describe('refused addresses', () => {
  const refused: [string, ResolvedAddress[]][] = [
    ['webhookUrlMetadata', [v4('169.254.169.254'), v4('168.63.129.16'), v4('100.100.100.200'), v6('fd00:ec2::254')]],
    ['webhookUrlLoopback', [v4('127.0.0.0'), v4('127.0.0.1'), v4('127.255.255.255'), v6('::1')]],
    [
      'webhookUrlPrivate',
      [
        v4('10.0.0.0'),
        v4('10.255.255.255'),
        v4('172.16.0.0'),
        v4('172.31.255.255'),
        v4('192.168.0.0'),
        v4('192.168.255.255'),
        v6('fc00::'),
        v6('fdff:ffff::1'),
      ],
    ],
    ['webhookUrlLinkLocal', [v4('169.254.0.0'), v4('169.254.255.255'), v6('fe80::'), v6('febf:ffff::1')]],
    ['webhookUrlShared', [v4('100.64.0.0'), v4('100.127.255.255')]],
    ['webhookUrlMulticast', [v4('224.0.0.0'), v4('239.255.255.255'), v6('ff00::'), v6('ffff:ffff::1')]],
    [
      'webhookUrlReserved',
      [
        v4('0.0.0.0'),
        v4('0.255.255.255'),
        v4('240.0.0.0'),
        v4('255.255.255.255'),
        v6('::'),
        v6('64:ff9b::'),
        v6('64:ff9b::ffff:ffff'),
        v6('2001:db8::'),
        v6('2001:db8:ffff::1'),
      ],
    ],
  ];

  for (const [rule, addresses] of refused) {
    it(`${rule}: ${addresses.map((address) => address.address).join(', ')}`, async () => {
      const urlRules = await rules();
      for (const address of addresses) expect(urlRules.refusedAddress(address, false), address.address).toBe(rule);
    });
  }

  it('allows public addresses, also just outside the refused ranges', async () => {
    const urlRules = await rules();
    for (const address of [
      v4('8.8.8.8'),
      v4('1.0.0.0'),
      v4('9.255.255.255'),
      v4('11.0.0.0'),
      v4('100.63.255.255'),
      v4('100.128.0.0'),
      v4('126.255.255.255'),
      v4('128.0.0.0'),
      v4('169.253.255.255'),
      v4('169.255.0.0'),
      v4('172.15.255.255'),
      v4('172.32.0.0'),
      v4('192.167.255.255'),
      v4('192.169.0.0'),
      v4('223.255.255.255'),
      v6('2606:4700:4700::1111'),
      // Only global unicast (2000::/3) is allowed in IPv6, outside its special-purpose blocks.
      v6('2001:200::1'),
      v6('2001:db9::1'),
      v6('2003::1'),
    ]) {
      expect(urlRules.refusedAddress(address, false), address.address).toBeUndefined();
    }
  });

  it('judges an IPv4 address written inside IPv6 as the IPv4 address it is', async () => {
    const urlRules = await rules();
    expect(urlRules.refusedAddress(v6('::ffff:10.0.0.1'), false)).toBe('webhookUrlPrivate');
    expect(urlRules.refusedAddress(v6('::FFFF:169.254.169.254'), false)).toBe('webhookUrlMetadata');
    expect(urlRules.refusedAddress(v6('::ffff:127.0.0.1'), false)).toBe('webhookUrlLoopback');
    expect(urlRules.refusedAddress(v6('::ffff:127.0.0.1'), true)).toBeUndefined();
    expect(urlRules.refusedAddress(v6('::ffff:8.8.8.8'), false)).toBeUndefined();
  });

  it('allows loopback only when the local stack says so, and nothing else with it', async () => {
    const urlRules = await rules();
    expect(urlRules.refusedAddress(v4('127.0.0.1'), true)).toBeUndefined();
    expect(urlRules.refusedAddress(v6('::1'), true)).toBeUndefined();
    expect(urlRules.refusedAddress(v4('10.0.0.1'), true)).toBe('webhookUrlPrivate');
    expect(urlRules.refusedAddress(v4('169.254.169.254'), true)).toBe('webhookUrlMetadata');
  });

  it('lists every rule a URL can break', async () => {
    const urlRules = await rules();
    expect(urlRules.URL_RULES).toEqual([
      'webhookUrlInvalid',
      'webhookUrlCredentials',
      'webhookUrlNotHttps',
      'webhookUrlPort',
      'webhookUrlUnresolvable',
      'webhookUrlMetadata',
      'webhookUrlLoopback',
      'webhookUrlPrivate',
      'webhookUrlLinkLocal',
      'webhookUrlShared',
      'webhookUrlMulticast',
      'webhookUrlReserved',
    ]);
  });
});

describe('the special-purpose registries, at the check of a URL', () => {
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
    const urlRules = await rules();
    await expect(urlRules.checkWebhookUrl(urlOf(address), false)).rejects.toMatchObject({ status: 400, messageKey: rule });
  });

  it.each(['8.8.8.8', '1.1.1.1', '9.9.9.9', '151.101.1.69', '::ffff:8.8.8.8', '2606:4700::1111', '2001:4860:4860::8888', '2a00:1450:4001:80b::200e'])(
    'accepts the public address %s',
    async (address) => {
      const urlRules = await rules();
      await expect(urlRules.checkWebhookUrl(urlOf(address), false)).resolves.toBeUndefined();
    },
  );
});

const refusal = (messageKey: string, host: string) => expect.objectContaining({ status: 400, messageKey, params: { host } });

describe("a webhook URL's form", () => {
  it('is an absolute https URL', async () => {
    const urlRules = await rules();
    expect(urlRules.webhookUrl('https://hooks.example.com/in?a=1', false).href).toBe('https://hooks.example.com/in?a=1');
    expect(() => urlRules.webhookUrl('not a url', false)).toThrow(refusal('webhookUrlInvalid', ''));
    expect(() => urlRules.webhookUrl('/relative', false)).toThrow(refusal('webhookUrlInvalid', ''));
    for (const scheme of ['ftp', 'file', 'ws', 'javascript']) {
      expect(() => urlRules.webhookUrl(`${scheme}://hooks.example.com/x`, true)).toThrow(refusal('webhookUrlNotHttps', 'hooks.example.com'));
    }
  });

  it('is at most 2048 characters long', async () => {
    const urlRules = await rules();
    const base = 'https://hooks.example.com/';
    expect(MAX_WEBHOOK_URL_LENGTH).toBe(2048);
    expect(urlRules.webhookUrl(base + 'a'.repeat(2048 - base.length), false).href).toHaveLength(2048);
    expect(() => urlRules.webhookUrl(base + 'a'.repeat(2049 - base.length), false)).toThrow(refusal('webhookUrlInvalid', 'hooks.example.com'));
  });

  it('carries no credentials', async () => {
    const urlRules = await rules();
    expect(() => urlRules.webhookUrl('https://user@hooks.example.com/', false)).toThrow(refusal('webhookUrlCredentials', 'hooks.example.com'));
    expect(() => urlRules.webhookUrl('https://:secret@hooks.example.com/', false)).toThrow(refusal('webhookUrlCredentials', 'hooks.example.com'));
  });

  it('has a port a receiver can listen on: 0, however written, is refused', async () => {
    const urlRules = await rules();
    for (const url of ['https://hooks.example.com:0/', 'https://hooks.example.com:00/in', 'http://localhost:0/'])
      expect(() => urlRules.webhookUrl(url, true), url).toThrow(refusal('webhookUrlPort', url.includes('localhost') ? 'localhost' : 'hooks.example.com'));
    expect(urlRules.webhookUrl('https://hooks.example.com:1/', false).port).toBe('1');
    expect(urlRules.webhookUrl('https://hooks.example.com:65535/', false).port).toBe('65535');
  });

  it('is http only where loopback is allowed', async () => {
    const urlRules = await rules();
    expect(() => urlRules.webhookUrl('http://hooks.example.com/', false)).toThrow(refusal('webhookUrlNotHttps', 'hooks.example.com'));
    expect(urlRules.webhookUrl('http://localhost:8080/', true).protocol).toBe('http:');
  });

  it('never names a metadata service, in any case, with or without the final dot', async () => {
    const urlRules = await rules();
    for (const host of ['metadata.google.internal', 'METADATA.Azure.com', 'metadata', 'metadata.google.internal.']) {
      expect(() => urlRules.webhookUrl(`https://${host}/computeMetadata/v1/`, true)).toThrow(
        expect.objectContaining({ status: 400, messageKey: 'webhookUrlMetadata' }),
      );
    }
    expect(urlRules.webhookUrl('https://metadata.example.com/', false).hostname).toBe('metadata.example.com');
  });

  it('names at most 255 characters of the host in a refusal', async () => {
    const urlRules = await rules();
    const host = `${'a'.repeat(60)}.`.repeat(5) + 'example';
    expect(() => urlRules.webhookUrl(`ftp://${host}/`, false)).toThrow(refusal('webhookUrlNotHttps', host.slice(0, 255)));
  });
});

describe("the addresses a webhook URL's host stands for", () => {
  it('are the literal address, IPv4 or IPv6 in brackets', async () => {
    const urlRules = await rules();
    expect(await urlRules.resolveWebhookHost(new URL('https://8.8.8.8/'), false)).toEqual([v4('8.8.8.8')]);
    expect(await urlRules.resolveWebhookHost(new URL('https://[2606:4700:4700::1111]/'), false)).toEqual([v6('2606:4700:4700::1111')]);
  });

  it('are each checked', async () => {
    const urlRules = await rules();
    await expect(urlRules.resolveWebhookHost(new URL('https://10.1.2.3/'), false)).rejects.toEqual(refusal('webhookUrlPrivate', '10.1.2.3'));
    await expect(urlRules.resolveWebhookHost(new URL('https://[fe80::1]/'), false)).rejects.toEqual(refusal('webhookUrlLinkLocal', 'fe80::1'));
    await expect(urlRules.resolveWebhookHost(new URL('https://localhost/'), false)).rejects.toEqual(refusal('webhookUrlLoopback', 'localhost'));
  });

  it('are what the name resolves to now', async () => {
    const urlRules = await rules();
    const addresses = await urlRules.resolveWebhookHost(new URL('https://localhost:9/'), true);
    expect(addresses.length).toBeGreaterThan(0);
    for (const address of addresses) expect(['127.0.0.1', '::1']).toContain(address.address);
  });

  it('must exist', async () => {
    const urlRules = await rules();
    await expect(urlRules.resolveWebhookHost(new URL('https://no-such-host.invalid/'), false)).rejects.toEqual(
      refusal('webhookUrlUnresolvable', 'no-such-host.invalid'),
    );
  });

  it('must be this machine for plain http, where it is allowed', async () => {
    const urlRules = await rules();
    expect(await urlRules.resolveWebhookHost(new URL('http://127.0.0.1:8080/'), true)).toEqual([v4('127.0.0.1')]);
    expect(await urlRules.resolveWebhookHost(new URL('http://[::1]:8080/'), true)).toEqual([v6('::1')]);
    await expect(urlRules.resolveWebhookHost(new URL('http://8.8.8.8/'), true)).rejects.toEqual(refusal('webhookUrlNotHttps', '8.8.8.8'));
    expect(await urlRules.resolveWebhookHost(new URL('https://8.8.8.8/'), true)).toEqual([v4('8.8.8.8')]);
  });
});

describe('the check at create and change', () => {
  it('applies the form and the addresses', async () => {
    const urlRules = await rules();
    await expect(urlRules.checkWebhookUrl('https://8.8.8.8/hooks', false)).resolves.toBeUndefined();
    await expect(urlRules.checkWebhookUrl('https://user@8.8.8.8/', false)).rejects.toEqual(expect.objectContaining({ messageKey: 'webhookUrlCredentials' }));
    await expect(urlRules.checkWebhookUrl('https://192.168.1.1/', false)).rejects.toEqual(expect.objectContaining({ messageKey: 'webhookUrlPrivate' }));
    await expect(urlRules.checkWebhookUrl('http://127.0.0.1/', true)).resolves.toBeUndefined();
    await expect(urlRules.checkWebhookUrl('http://127.0.0.1/', false)).rejects.toEqual(expect.objectContaining({ messageKey: 'webhookUrlNotHttps' }));
  });

  it('allows loopback only when told, and plain http to loopback only', async () => {
    const urlRules = await rules();
    await expect(urlRules.checkWebhookUrl('http://127.0.0.1:9/hook', true)).resolves.toBeUndefined();
    await expect(urlRules.checkWebhookUrl('http://[::1]:9/hook', true)).resolves.toBeUndefined();
    await expect(urlRules.checkWebhookUrl('http://8.8.8.8/hook', true)).rejects.toMatchObject({ messageKey: 'webhookUrlNotHttps' });
    await expect(urlRules.checkWebhookUrl('https://[::127.0.0.1]/hook', true)).rejects.toMatchObject({ messageKey: 'webhookUrlReserved' });
    await expect(urlRules.checkWebhookUrl('https://10.0.0.1/hook', true)).rejects.toMatchObject({ messageKey: 'webhookUrlPrivate' });
  });
});
