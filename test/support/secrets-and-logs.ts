/**
 * Secrets and logs: every token, key and secret the hostile tests hand to a host, and the checks that
 * none of them shows up in a host's log; the last test of each hostile file also reports how many
 * answers passed the checks of every answer (counted by raw-http.ts).
 */
import { readFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
// The meta field responsesChecked is declared there.
import type {} from './hostile-cases.js';
import { stack } from './stack.js';

/** Every token, key and secret the hostile tests handed to a host: none may show up in a log. */
export const secretsHandedOut = new Set<string>();
/** How many responses passed the checks every response must pass. */
export const responsesChecked = { count: 0 };

/** The fixed secrets of the shared stack; tests add their own. */
export function knownSecrets(): string[] {
  const accountKey = /AccountKey=([^;]+)/.exec(stack.storageConnectionString)?.[1];
  const privateExponent = typeof stack.privateJwk.d === 'string' ? stack.privateJwk.d : undefined;
  return [stack.cosmosKey, 'local-development-secret', accountKey, privateExponent, ...extraSecrets].filter((value): value is string => Boolean(value));
}

const extraSecrets = new Set<string>();
export function rememberSecret(secret: string): string {
  extraSecrets.add(secret);
  return secret;
}

// A JWT's header and payload as they start: base64url of `{"` twice, joined by a dot.
const JWT_SHAPED = /eyJ[\w-]{8,}\.[\w-]*/;

/**
 * No token, key or secret in a log: nothing shaped like a JWT, none of the known secrets, and no
 * long piece of any token handed to a host (a malformed token need not look like a JWT).
 */
export function expectNoSecretsInLog(log: string, label: string): void {
  const jwt = JWT_SHAPED.exec(log);
  expect(jwt ? log.slice(Math.max(0, jwt.index - 200), jwt.index + 60) : undefined, `a token in ${label}`).toBeUndefined();
  for (const secret of knownSecrets()) expect(log.includes(secret), `the secret ${secret.slice(0, 6)}… in ${label}`).toBe(false);
  for (const token of secretsHandedOut) {
    for (const piece of token.match(/[^.\s]{24,}/g) ?? []) {
      // The header of a token is shared by every token of its kind; its payload and signature are not.
      if (piece.startsWith('eyJhbGciOi') || !log.includes(piece)) continue;
      expect.fail(`a piece of a token (${piece.slice(0, 12)}…) appears in ${label}`);
    }
  }
}

/** The shared host's log so far (global setup writes it). */
export async function sharedHostLog(): Promise<string> {
  return readFile(stack.hostLogFile, 'utf8');
}

/**
 * The last test of each hostile file: no token, key or secret in the file's own host logs or in the
 * shared host's log so far, and the count of answers that passed the checks of every answer.
 */
export function logsAreClean(label: string, lines: () => string[]): void {
  it(`leave no token, key or secret in ${label} or in the shared host's log; every answer carried no-store and nosniff`, async ({ task }) => {
    expectNoSecretsInLog(lines().join('\n'), label);
    expectNoSecretsInLog(await sharedHostLog(), "the shared host's log");
    task.meta.responsesChecked = responsesChecked.count;
    expect(responsesChecked.count, 'answers checked in this file').toBeGreaterThan(0);
  });
}
