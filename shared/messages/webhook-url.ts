import type { Messages } from './types.js';

/** What the webhook URL rules (url-rules.ts) tell a caller whose URL they refuse. */
export const webhookUrlMessages = {
  webhookUrlInvalid: {
    en: () => 'The webhook URL is not an absolute URL.',
    ja: () => 'Webhook の URL が絶対 URL ではありません。',
  },
  webhookUrlCredentials: {
    en: () => 'The webhook URL must not hold a user name or password.',
    ja: () => 'Webhook の URL にユーザー名やパスワードを含めることはできません。',
  },
  webhookUrlNotHttps: {
    en: () => 'The webhook URL must use https.',
    ja: () => 'Webhook の URL には https を使用してください。',
  },
  webhookUrlPort: {
    en: () => "The webhook URL's port must be from 1 to 65535 (nothing can be reached on port 0).",
    ja: () => 'Webhook の URL のポートは 1 から 65535 の範囲で指定してください（ポート 0 には接続できません）。',
  },
  webhookUrlUnresolvable: {
    en: (p) => `The webhook URL's host ${p.host} does not resolve to an address.`,
    ja: (p) => `Webhook の URL のホスト ${p.host} はアドレスに解決できません。`,
  },
  webhookUrlLoopback: {
    en: (p) => `The webhook URL's host ${p.host} is this machine (a loopback address).`,
    ja: (p) => `Webhook の URL のホスト ${p.host} はこのマシン自身（ループバックアドレス）です。`,
  },
  webhookUrlPrivate: {
    en: (p) => `The webhook URL's host ${p.host} is in a private network.`,
    ja: (p) => `Webhook の URL のホスト ${p.host} はプライベートネットワーク内にあります。`,
  },
  webhookUrlLinkLocal: {
    en: (p) => `The webhook URL's host ${p.host} is a link-local address.`,
    ja: (p) => `Webhook の URL のホスト ${p.host} はリンクローカルアドレスです。`,
  },
  webhookUrlShared: {
    en: (p) => `The webhook URL's host ${p.host} is in the shared address space (100.64.0.0/10).`,
    ja: (p) => `Webhook の URL のホスト ${p.host} は共有アドレス空間（100.64.0.0/10）内にあります。`,
  },
  webhookUrlMulticast: {
    en: (p) => `The webhook URL's host ${p.host} is a multicast address.`,
    ja: (p) => `Webhook の URL のホスト ${p.host} はマルチキャストアドレスです。`,
  },
  webhookUrlMetadata: {
    en: (p) => `The webhook URL's host ${p.host} is a cloud metadata service.`,
    ja: (p) => `Webhook の URL のホスト ${p.host} はクラウドのメタデータサービスです。`,
  },
  webhookUrlReserved: {
    en: (p) => `The webhook URL's host ${p.host} is a special-purpose or reserved address (IANA's special-purpose registries).`,
    ja: (p) => `Webhook の URL のホスト ${p.host} は特殊用途または予約済みのアドレスです（IANA の特殊用途アドレスレジストリ）。`,
  },
} satisfies Messages;
