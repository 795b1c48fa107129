/**
 * Signatures as the Standard Webhooks specification has them: `webhook-signature` holds
 * `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` for each secret in use, space-separated,
 * keyed with the secret's decoded bytes. A secret is `whsec_` and the base64 of 32 random bytes.
 */
import { createHmac, randomBytes } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

export function newSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** The headers of one attempt: the same id on every attempt (receivers de-duplicate on it), the attempt's time, its signatures. */
export function signedHeaders(secrets: readonly string[], id: string, timestampSeconds: number, body: string): Record<string, string> {
  const signed = `${id}.${timestampSeconds}.${body}`;
  const signatures = secrets.map((secret) => {
    const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
    return `v1,${createHmac('sha256', key).update(signed).digest('base64')}`;
  });
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': signatures.join(' ') };
}
