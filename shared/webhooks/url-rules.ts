/**
 * Where the API may send a webhook: the contract's rules against server-side request forgery. The
 * URL is checked when a subscription is made or changed, and every address its host resolves to is
 * checked again before every attempt (a host can resolve elsewhere later: DNS rebinding); the
 * attempt then connects to an address that was checked, never to a second lookup's answer.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { ApiError } from '../errors.js';
import type { MessageKey } from '../messages/catalog.js';
import { MAX_WEBHOOK_URL_LENGTH } from '../schemas/webhooks.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

function blockList(ranges: [address: string, prefix: number, family: 'ipv4' | 'ipv6'][]): BlockList {
  const list = new BlockList();
  for (const [address, prefix, family] of ranges) list.addSubnet(address, prefix, family);
  return list;
}

/** The address ranges a webhook may not reach, by the rule its refusal names; the first that matches wins. */
const REFUSED_RANGES: [MessageKey, BlockList][] = [
  // Azure's instance metadata and wire server, AWS's (IPv4 and IPv6), Alibaba's.
  [
    'webhookUrlMetadata',
    blockList([
      ['169.254.169.254', 32, 'ipv4'],
      ['168.63.129.16', 32, 'ipv4'],
      ['100.100.100.200', 32, 'ipv4'],
      ['fd00:ec2::254', 128, 'ipv6'],
    ]),
  ],
  [
    'webhookUrlLoopback',
    blockList([
      ['127.0.0.0', 8, 'ipv4'],
      ['::1', 128, 'ipv6'],
    ]),
  ],
  [
    'webhookUrlPrivate',
    blockList([
      ['10.0.0.0', 8, 'ipv4'],
      ['172.16.0.0', 12, 'ipv4'],
      ['192.168.0.0', 16, 'ipv4'],
      ['fc00::', 7, 'ipv6'],
    ]),
  ],
  [
    'webhookUrlLinkLocal',
    blockList([
      ['169.254.0.0', 16, 'ipv4'],
      ['fe80::', 10, 'ipv6'],
    ]),
  ],
  ['webhookUrlShared', blockList([['100.64.0.0', 10, 'ipv4']])],
  [
    'webhookUrlMulticast',
    blockList([
      ['224.0.0.0', 4, 'ipv4'],
      ['ff00::', 8, 'ipv6'],
    ]),
  ],
  // Every other special-purpose range of the IANA IPv4 and IPv6 registries: documentation, benchmarking,
  // protocol assignments, AS112, AMT, the 6to4 relay, reserved; and the IPv6 ones inside global unicast
  // (IETF protocol assignments with Teredo, documentation, 6to4, AS112). Outside 2000::/3, see below.
  [
    'webhookUrlReserved',
    blockList([
      ['0.0.0.0', 8, 'ipv4'],
      ['192.0.0.0', 24, 'ipv4'],
      ['192.0.2.0', 24, 'ipv4'],
      ['192.31.196.0', 24, 'ipv4'],
      ['192.52.193.0', 24, 'ipv4'],
      ['192.88.99.0', 24, 'ipv4'],
      ['192.175.48.0', 24, 'ipv4'],
      ['198.18.0.0', 15, 'ipv4'],
      ['198.51.100.0', 24, 'ipv4'],
      ['203.0.113.0', 24, 'ipv4'],
      ['240.0.0.0', 4, 'ipv4'],
      ['2001::', 23, 'ipv6'],
      ['2001:db8::', 32, 'ipv6'],
      ['2002::', 16, 'ipv6'],
      ['2620:4f:8000::', 48, 'ipv6'],
      ['3fff::', 20, 'ipv6'],
    ]),
  ],
];

/** Every rule a URL can break, as its refusal names it. */
export const URL_RULES: MessageKey[] = [
  'webhookUrlInvalid',
  'webhookUrlCredentials',
  'webhookUrlNotHttps',
  'webhookUrlPort',
  'webhookUrlUnresolvable',
  ...REFUSED_RANGES.map(([rule]) => rule),
];

/** Host names that are metadata services whatever they resolve to. */
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata.azure.com', 'metadata']);

/**
 * IPv6 beyond global unicast (2000::/3) is special-purpose or reserved: unspecified, IPv4-compatible,
 * SIIT, NAT64 (64:ff9b::/96 and 64:ff9b:1::/48), discard, site-local, segment routing. An IPv4-mapped
 * address (`::ffff:10.0.0.1`, or `::ffff:a00:1`) is the IPv4 address itself on a dual-stack socket: the
 * block lists above judge it by their IPv4 ranges, so it is not refused here as IPv6.
 */
const GLOBAL_UNICAST = blockList([['2000::', 3, 'ipv6']]);
const IPV4_MAPPED = blockList([['::ffff:0:0', 96, 'ipv6']]);

/** The rule an address breaks, or undefined. Loopback is allowed only when the local stack says so. */
export function refusedAddress({ address, family }: ResolvedAddress, allowLoopback: boolean): MessageKey | undefined {
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const [rule, ranges] of REFUSED_RANGES) {
    if (!ranges.check(address, type)) continue;
    if (rule === 'webhookUrlLoopback' && allowLoopback) return undefined;
    return rule;
  }
  if (family === 6 && !GLOBAL_UNICAST.check(address, 'ipv6') && !IPV4_MAPPED.check(address, 'ipv6')) return 'webhookUrlReserved';
  return undefined;
}

function refuse(rule: MessageKey, host: string): ApiError {
  return new ApiError(400, rule, { host: host.slice(0, 255) });
}

/** The URL's form: absolute, no credentials, https (or http to loopback where allowed), a port from 1, not too long. */
export function webhookUrl(value: string, allowLoopback: boolean): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw refuse('webhookUrlInvalid', '');
  }
  if (value.length > MAX_WEBHOOK_URL_LENGTH) throw refuse('webhookUrlInvalid', url.hostname);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refuse('webhookUrlNotHttps', url.hostname);
  if (url.username || url.password) throw refuse('webhookUrlCredentials', url.hostname);
  if (url.protocol === 'http:' && !allowLoopback) throw refuse('webhookUrlNotHttps', url.hostname);
  // The URL parser keeps ports up to 65535, and 0 too, which no receiver listens on.
  if (url.port === '0') throw refuse('webhookUrlPort', url.hostname);
  if (METADATA_HOSTS.has(url.hostname.toLowerCase().replace(/\.$/, ''))) throw refuse('webhookUrlMetadata', url.hostname);
  return url;
}

/** The URL's host as a name or an address (an IPv6 address without its brackets). */
export function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/** Every address the URL's host stands for, each checked; plain http must lead to this machine only. */
export async function resolveWebhookHost(url: URL, allowLoopback: boolean): Promise<ResolvedAddress[]> {
  const host = bareHost(url);
  let addresses: ResolvedAddress[];
  const literal = isIP(host);
  if (literal) {
    addresses = [{ address: host, family: literal as 4 | 6 }];
  } else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })) as ResolvedAddress[];
    } catch {
      throw refuse('webhookUrlUnresolvable', host);
    }
    if (addresses.length === 0) throw refuse('webhookUrlUnresolvable', host);
  }
  for (const address of addresses) {
    const rule = refusedAddress(address, allowLoopback);
    if (rule) throw refuse(rule, host);
    if (url.protocol === 'http:' && refusedAddress(address, false) !== 'webhookUrlLoopback') throw refuse('webhookUrlNotHttps', host);
  }
  return addresses;
}

/** The contract's checks of a subscription's URL, at create and at change. */
export async function checkWebhookUrl(value: string, allowLoopback: boolean): Promise<void> {
  await resolveWebhookHost(webhookUrl(value, allowLoopback), allowLoopback);
}
