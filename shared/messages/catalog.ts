import type { Language, MessageParams, Messages } from './types.js';
import { webhookUrlMessages } from './webhook-url.js';

export type { Language };

/** Every message the API sends, in each language it speaks. */
const catalog = {
  validationFailed: {
    en: () => 'The request is not valid. See details.',
    ja: () => 'リクエストが正しくありません。details を確認してください。',
  },
  unknownField: {
    en: (p) => `Unknown field "${p.name}".`,
    ja: (p) => `不明なフィールド「${p.name}」です。`,
  },
  moreProblems: {
    en: (p) => `…and ${p.count} more problems.`,
    ja: (p) => `…ほかに ${p.count} 件の問題があります。`,
  },
  bodyIncomplete: {
    en: () => 'The request body ended before all of it arrived.',
    ja: () => 'リクエスト本文がすべて届く前に途切れました。',
  },
  invalidJson: {
    en: () => 'The request body is not valid JSON.',
    ja: () => 'リクエスト本文が正しい JSON ではありません。',
  },
  invalidUtf8: {
    en: () => 'The request body is not valid UTF-8.',
    ja: () => 'リクエスト本文が正しい UTF-8 ではありません。',
  },
  bodyNotObject: {
    en: () => 'The request body must be a JSON object.',
    ja: () => 'リクエスト本文は JSON オブジェクトである必要があります。',
  },
  lengthRequired: {
    en: () => 'The request body arrived empty: a body sent without Content-Length (chunked) reaches the API empty. Send it with Content-Length.',
    ja: () => 'リクエスト本文が空で届きました。Content-Length なし（chunked）で送信した本文は API に空で届きます。Content-Length を付けて送信してください。',
  },
  bodyTooLarge: {
    en: (p) => `The request body is larger than ${p.limit} bytes.`,
    ja: (p) => `リクエスト本文が ${p.limit} バイトを超えています。`,
  },
  unsupportedMediaType: {
    en: () => 'The request body must be sent with Content-Type: application/json.',
    ja: () => 'リクエスト本文は Content-Type: application/json で送信してください。',
  },
  pingNotSubscribable: {
    en: () => '"webhook.ping" cannot be subscribed to: it is sent on request, by POST /api/webhooks/{webhookId}/ping, to that subscription only.',
    ja: () => '「webhook.ping」は購読できません。POST /api/webhooks/{webhookId}/ping で要求したときに、そのサブスクリプションにだけ送信されます。',
  },
  wholeNumberFrom: {
    en: (p) => `Must be a whole number from ${p.min} to ${p.max}.`,
    ja: (p) => `${p.min} から ${p.max} までの整数である必要があります。`,
  },
  idForm: {
    en: (p) => `Must be an id such as ${p.example}.`,
    ja: (p) => `${p.example} のような形式の ID である必要があります。`,
  },
  calendarDate: {
    en: () => 'Must be a date that exists, written YYYY-MM-DD (such as 2027-01-15).',
    ja: () => '存在する日付を YYYY-MM-DD 形式（例: 2027-01-15）で指定する必要があります。',
  },
  dateTime: {
    en: () => 'Must be a date and time in ISO 8601 with a time zone (such as 2026-11-21T09:30:00Z).',
    ja: () => 'タイムゾーン付きの ISO 8601 形式の日時（例: 2026-11-21T09:30:00Z）である必要があります。',
  },
  timeOutOfRange: {
    en: () => 'Must be a time from 0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z, once turned into UTC.',
    ja: () => '0000-01-01T00:00:00Z から 9999-12-31T23:59:59.999Z まで（UTC に換算して）の日時である必要があります。',
  },
  invalidForm: {
    en: () => 'Is not in the form this value takes: see the API description.',
    ja: () => 'この値に必要な形式ではありません。API の説明を確認してください。',
  },
  emptyUpdate: {
    en: () => 'The request body must contain at least one field to change.',
    ja: () => 'リクエスト本文には変更するフィールドが 1 つ以上必要です。',
  },
  repeatedQueryParameter: {
    en: (p) => `The query parameter "${p.name}" may appear only once.`,
    ja: (p) => `クエリパラメーター「${p.name}」は 1 回だけ指定できます。`,
  },
  oneValueOnly: {
    en: (p) => `"${p.name}" takes one value: a list separated by commas is not accepted.`,
    ja: (p) => `「${p.name}」には値を 1 つだけ指定できます。カンマ区切りのリストは指定できません。`,
  },
  invalidCursor: {
    en: () => 'The cursor is not valid. Start again from the first page.',
    ja: () => 'カーソルが正しくありません。最初のページからやり直してください。',
  },
  cursorForOtherQuery: {
    en: () => 'The cursor belongs to a different query. Use it only with the filters and sort it came with.',
    ja: () => 'カーソルは別のクエリのものです。発行時と同じフィルターと並び順で使用してください。',
  },
  noControlCharacters: {
    en: () => 'Must not contain control characters.',
    ja: () => '制御文字を含めることはできません。',
  },
  noBidirectionalControls: {
    en: () => 'Must not contain bidirectional control characters (U+202A–U+202E, U+2066–U+2069).',
    ja: () => '双方向制御文字（U+202A–U+202E、U+2066–U+2069）を含めることはできません。',
  },
  nothingVisible: {
    en: () => 'Must contain at least one visible character.',
    ja: () => '表示される文字を 1 文字以上含める必要があります。',
  },
  notWellFormedText: {
    en: () => 'Must be well-formed Unicode text.',
    ja: () => '正しい Unicode テキストである必要があります。',
  },
  invalidIdempotencyKey: {
    en: () => 'The Idempotency-Key header must be sent once, as 1 to 255 visible ASCII characters other than a comma.',
    ja: () => 'Idempotency-Key ヘッダーは 1 回だけ、カンマ以外の表示可能な ASCII 文字 1～255 文字で送信する必要があります。',
  },
  idempotencyKeyReused: {
    en: () => 'This Idempotency-Key was already used with a different request.',
    ja: () => 'この Idempotency-Key は別のリクエストで既に使用されています。',
  },
  invalidIfMatch: {
    en: () => 'The If-Match header must be "*" or a list of quoted entity tags.',
    ja: () => 'If-Match ヘッダーは "*" または引用符で囲んだエンティティタグのリストである必要があります。',
  },
  tokenMissing: {
    en: () => 'An access token is required: send it as "Authorization: Bearer <token>".',
    ja: () => 'アクセストークンが必要です。「Authorization: Bearer <token>」として送信してください。',
  },
  tokenInQuery: {
    en: () => 'Access tokens are not accepted in the query string; send them in the Authorization header.',
    ja: () => 'クエリ文字列のアクセストークンは受け付けません。Authorization ヘッダーで送信してください。',
  },
  tokenInvalid: {
    en: () => 'The access token is missing, malformed, expired or not issued for this API.',
    ja: () => 'アクセストークンが不足しているか、形式が正しくないか、期限切れか、この API 向けではありません。',
  },
  tokenExpired: {
    en: () => 'The access token has expired: get a new one.',
    ja: () => 'アクセストークンの有効期限が切れています。新しいトークンを取得してください。',
  },
  tokenNotYetValid: {
    en: (p) => `The access token is not valid yet: its nbf or iat is more than ${p.skewMinutes} minutes ahead of this service's clock.`,
    ja: (p) => `アクセストークンはまだ有効ではありません。nbf または iat がこのサービスの時刻より ${p.skewMinutes} 分以上先です。`,
  },
  tokenWrongAudience: {
    en: () => "The access token was issued for another resource: its audience (aud) is not this API's App ID URI or client id.",
    ja: () => 'アクセストークンは別のリソース向けに発行されています。audience（aud）がこの API の App ID URI またはクライアント ID ではありません。',
  },
  tokenWrongIssuer: {
    en: () => 'The issuer (iss) of the access token is not the one this API accepts for its tenant (tid) and version (ver).',
    ja: () => 'アクセストークンの issuer（iss）が、そのテナント（tid）とバージョン（ver）に対してこの API が受け付けるものではありません。',
  },
  tokenIsIdToken: {
    en: () => 'This is an ID token, which signs a user in to an app; send an access token for this API.',
    ja: () => 'これは ID トークンです（アプリへのサインイン用）。この API 向けのアクセストークンを送信してください。',
  },
  scopeMissing: {
    en: () => 'The access token does not carry the scope "access_as_user".',
    ja: () => 'アクセストークンにスコープ「access_as_user」が含まれていません。',
  },
  forbidden: {
    en: (p) => `Your role does not allow this operation (${p.permission}).`,
    ja: (p) => `このロールではこの操作（${p.permission}）は許可されていません。`,
  },
  identityProviderUnavailable: {
    en: () => 'The identity provider cannot be reached to check the token. Try again shortly.',
    ja: () => 'トークンを検証するための ID プロバイダーに接続できません。しばらくしてから再試行してください。',
  },
  routeNotFound: {
    en: (p) => `No operation matches ${p.method} ${p.path}.`,
    ja: (p) => `${p.method} ${p.path} に一致する操作はありません。`,
  },
  outsideApi: {
    en: (p) =>
      `No operation matches ${p.method} ${p.path}: the API's paths begin with ${p.base}, as in ${p.base}/projects, and its reference page is ${p.base}/docs.`,
    ja: (p) =>
      `${p.method} ${p.path} に一致する操作はありません。API のパスは ${p.base} で始まります（例: ${p.base}/projects）。リファレンスページは ${p.base}/docs です。`,
  },
  methodNotAllowed: {
    en: (p) => `${p.path} does not take ${p.method}: it takes ${p.allowed}.`,
    ja: (p) => `${p.path} は ${p.method} を受け付けません。受け付けるメソッド: ${p.allowed}。`,
  },
  projectNotFound: {
    en: (p) => `Project ${p.id} does not exist.`,
    ja: (p) => `プロジェクト ${p.id} は存在しません。`,
  },
  taskNotFound: {
    en: (p) => `Task ${p.id} does not exist.`,
    ja: (p) => `タスク ${p.id} は存在しません。`,
  },
  consentRequired: {
    en: () => 'Consent is missing: an administrator of your organisation must grant this API access to the directory on your behalf.',
    ja: () => '同意がありません。組織の管理者が、この API にあなたの代理でディレクトリへアクセスすることを許可する必要があります。',
  },
  interactionRequired: {
    en: () =>
      'Your organisation requires you to sign in again (for example with multi-factor authentication). Get a new token with the claims in WWW-Authenticate.',
    ja: () => '組織のポリシーにより再サインイン（多要素認証など）が必要です。WWW-Authenticate の claims を使って新しいトークンを取得してください。',
  },
  directoryUnavailable: {
    en: () => 'Microsoft Graph cannot be reached or is busy. Try again shortly.',
    ja: () => 'Microsoft Graph に接続できないか、混雑しています。しばらくしてから再試行してください。',
  },
  directoryQueryRefused: {
    en: () => 'Microsoft Graph refused this directory query. Change "q", or start again from the first page.',
    ja: () => 'Microsoft Graph がこのディレクトリ検索を拒否しました。「q」を変更するか、最初のページからやり直してください。',
  },
  directoryFailed: {
    en: (p) => `Microsoft Graph answered the directory query with ${p.status}.`,
    ja: (p) => `Microsoft Graph がディレクトリ検索に ${p.status} で応答しました。`,
  },
  directoryAccessDenied: {
    en: () => 'Microsoft Graph refused to list the directory for you: the User.Read.All permission is missing.',
    ja: () => 'Microsoft Graph がディレクトリの一覧を拒否しました。User.Read.All のアクセス許可がありません。',
  },
  roleFilterNeedsRecordedUsers: {
    en: () => "The role filter applies to recorded users only; the directory does not know the API's roles.",
    ja: () => 'role フィルターは記録済みユーザーにのみ使用できます。ディレクトリは API のロールを知りません。',
  },
  ragJobNotFound: {
    en: (p) => `RAG job ${p.id} does not exist.`,
    ja: (p) => `RAG ジョブ ${p.id} は存在しません。`,
  },
  ragJobActive: {
    en: (p) => `A RAG index rebuild is already queued or running (job ${p.id}). Wait for it to finish.`,
    ja: (p) => `RAG インデックスの再構築は既にキュー登録済みか実行中です（ジョブ ${p.id}）。完了をお待ちください。`,
  },
  queueUnavailable: {
    en: () => 'The job queue cannot be reached, so the job was not started (it is marked Failed). Try again shortly.',
    ja: () => 'ジョブキューに接続できないため、ジョブは開始されませんでした（Failed として記録されています）。しばらくしてから再試行してください。',
  },
  userNotFound: {
    en: (p) => `User ${p.id} has not called the API yet.`,
    ja: (p) => `ユーザー ${p.id} はまだ API を呼び出していません。`,
  },
  usersOnly: {
    en: () => 'This operation needs a user: an app-only token has no user behind it.',
    ja: () => 'この操作にはユーザーが必要です。アプリ専用トークンにはユーザーがいません。',
  },
  projectArchived: {
    en: (p) => `Project ${p.id} is Archived: it and its tasks are read-only; the project can only be deleted.`,
    ja: (p) => `プロジェクト ${p.id} はアーカイブ済みのため、プロジェクトとそのタスクは読み取り専用です。プロジェクトは削除のみ可能です。`,
  },
  statusMoveNotAllowed: {
    en: (p) => `A project cannot move from ${p.from} to ${p.to}. Allowed next states: ${p.allowed}.`,
    ja: (p) => `プロジェクトを ${p.from} から ${p.to} に変更することはできません。変更可能な状態: ${p.allowed}。`,
  },
  preconditionFailed: {
    en: () => 'The resource has changed since you read it (If-Match does not match its ETag). Read it again and retry.',
    ja: () => 'リソースは読み取り後に変更されています（If-Match が ETag と一致しません）。再度読み取ってから再試行してください。',
  },
  ownerRequired: {
    en: () => 'Give "owner": the token carries no e-mail address that the API accepts.',
    ja: () => '「owner」を指定してください。トークンに API が受け付けるメールアドレスが含まれていません。',
  },
  tooManyMembers: {
    en: (p) => `A project has at most ${p.limit} members, including its owner.`,
    ja: (p) => `プロジェクトのメンバーは所有者を含めて最大 ${p.limit} 人です。`,
  },
  changeContended: {
    en: (p) => `${p.id} is being changed by many requests at once. Try again in a moment.`,
    ja: (p) => `${p.id} は多数のリクエストによって同時に変更されています。しばらくしてから再試行してください。`,
  },
  ragJobFinished: {
    en: (p) => `RAG job ${p.id} has already ended (${p.status}): there is nothing to cancel.`,
    ja: (p) => `RAG ジョブ ${p.id} は既に終了しています（${p.status}）。キャンセルするものはありません。`,
  },
  webhookNotFound: {
    en: (p) => `Webhook subscription ${p.id} does not exist.`,
    ja: (p) => `Webhook サブスクリプション ${p.id} は存在しません。`,
  },
  eventNotFound: {
    en: (p) => `Event ${p.id} does not exist, or is older than the week events are kept.`,
    ja: (p) => `イベント ${p.id} は存在しないか、保持期間の 1 週間を過ぎています。`,
  },
  deliveryNotFound: {
    en: (p) => `Delivery ${p.id} does not exist.`,
    ja: (p) => `配信 ${p.id} は存在しません。`,
  },
  webhookInactive: {
    en: (p) => `Webhook subscription ${p.id} is switched off; switch it on ("active": true) before you ping it or send a delivery again.`,
    ja: (p) => `Webhook サブスクリプション ${p.id} は無効です。ping や再送の前に有効にしてください（"active": true）。`,
  },
  tooManyWebhooks: {
    en: (p) => `A tenant has at most ${p.limit} webhook subscriptions. Delete one first.`,
    ja: (p) => `テナントの Webhook サブスクリプションは最大 ${p.limit} 件です。先に 1 件削除してください。`,
  },
  tooManySigningSecrets: {
    en: (p) => `A subscription signs with at most ${p.limit} secrets at once (a replaced one signs for 24 hours). Rotate again once the oldest expires.`,
    ja: (p) =>
      `署名に使うシークレットは同時に最大 ${p.limit} 個です（置き換えたものも 24 時間署名します）。最も古いものの期限が切れてから再度ローテーションしてください。`,
  },
  ...webhookUrlMessages,
  databaseUnavailable: {
    en: () => 'The database is unavailable or busy. Try again shortly.',
    ja: () => 'データベースが利用できないか混雑しています。しばらくしてから再試行してください。',
  },
  notConfigured: {
    en: () => 'The service is not configured. The operator has been told.',
    ja: () => 'サービスが構成されていません。運用者に通知されました。',
  },
  internalError: {
    en: (p) => `Something went wrong inside the service. Quote request id ${p.requestId} when reporting it.`,
    ja: (p) => `サービス内部でエラーが発生しました。報告の際はリクエスト ID ${p.requestId} をお伝えください。`,
  },
} satisfies Messages;

export type MessageKey = keyof typeof catalog;

export function translate(key: MessageKey, language: Language, params: MessageParams = {}): string {
  return catalog[key][language](params);
}
