import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { api, OTHER_TENANT, stack, token, type ApiResponse } from '../support/stack.js';
import { ApiDescription } from './description.js';

/**
 * requests.http runs as REST Client would run it, top to bottom, and every answer must be a success
 * the document describes. It runs in the second local tenant, whose RAG job may belong to another
 * test: a 409 from the rebuild is waited out.
 */

interface HttpFileRequest {
  title: string;
  name?: string;
  method: string;
  url: string;
  headers: [string, string][];
  body: string;
}

/** The part of REST Client's format that requests.http uses: `@name = value`, `# @name`, request, headers, body. */
function parseHttpFile(text: string): { variables: Map<string, string>; requests: HttpFileRequest[] } {
  const variables = new Map<string, string>();
  const requests: HttpFileRequest[] = [];
  for (const block of text.split(/^###/m)) {
    const [titleLine = '', ...lines] = block.split('\n');
    let name: string | undefined;
    let index = 0;
    for (; index < lines.length; index++) {
      const line = lines[index]!.trim();
      const variable = /^@(\w+)\s*=\s*(.*)$/.exec(line);
      if (variable) variables.set(variable[1]!, variable[2]!);
      else if (line.startsWith('#')) name = /^#\s*@name\s+(\w+)/.exec(line)?.[1] ?? name;
      else if (line) break;
    }
    const requestLine = /^(GET|POST|PUT|PATCH|DELETE) (\S+)$/.exec(lines[index]?.trim() ?? '');
    if (!requestLine) continue;
    const rest = lines.slice(index + 1);
    const blank = rest.findIndex((line) => !line.trim());
    const headerLines = blank === -1 ? rest : rest.slice(0, blank);
    requests.push({
      title: titleLine.trim(),
      ...(name ? { name } : {}),
      method: requestLine[1]!,
      url: requestLine[2]!,
      headers: headerLines.map((line) => [line.slice(0, line.indexOf(':')).trim(), line.slice(line.indexOf(':') + 1).trim()]),
      body: blank === -1 ? '' : rest.slice(blank).join('\n').trim(),
    });
  }
  return { variables, requests };
}

let description: ApiDescription;
let file: ReturnType<typeof parseHttpFile>;

beforeAll(async () => {
  description = await ApiDescription.served();
  file = parseHttpFile(await readFile(new URL('../../requests.http', import.meta.url), 'utf8'));
});

describe('requests.http', () => {
  it('has a request for every operation of the document, and none for anything else', () => {
    const covered = file.requests.map((request) => {
      const path = request.url.replace('{{baseUrl}}', '');
      return description.find(request.method, path.replace(/\{\{\w+\}\}/g, 'x'));
    });
    expect(covered.map((operation, index) => operation ?? file.requests[index]!.title)).not.toContain(undefined);
    const operations = (list: typeof covered) => [...new Set(list.map((operation) => `${operation?.method} ${operation?.path}`))].sort();
    expect(operations(covered)).toEqual(operations(description.operations));
  });

  it('runs from top to bottom against the API, each answer a documented success', async () => {
    const answers = new Map<string, ApiResponse>();
    const sentHeaders = new Map<string, Record<string, string>>();
    /** The id each Idempotency-Key created: the same key again must answer the same resource, replayed. */
    const createdByKey = new Map<string, string>();
    let replays = 0;
    const variables = new Map(file.variables);
    variables.set('baseUrl', stack.apiBaseUrl);
    variables.set('token', await token({ tenant: OTHER_TENANT, roles: ['LMS.Admin'] }));
    const resolve = (text: string): string =>
      text.replace(/\{\{([^}]+)\}\}/g, (_match, reference: string) => {
        if (reference === '$guid') return randomUUID();
        const [request, side, part, ...rest] = reference.split('.');
        if (side === 'request' && part === 'headers') return sentHeaders.get(request!)?.[rest.join('.').toLowerCase()] ?? '';
        const answer = answers.get(request!);
        if (answer && part === 'headers') return answer.headers.get(rest.join('.')) ?? '';
        if (answer && part === 'body') {
          // REST Client's JSONPath after `$`: `.name` and `[index]` steps.
          const steps = [
            ...rest
              .join('.')
              .slice(1)
              .matchAll(/\.([^.[\]]+)|\[(\d+)\]/g),
          ].map(([, key, index]) => key ?? Number(index));
          return String(steps.reduce((value: any, step) => value?.[step], answer.body));
        }
        const value = variables.get(reference);
        if (value === undefined) throw new Error(`requests.http uses {{${reference}}}, which it never defines`);
        return resolve(value);
      });

    for (const request of file.requests) {
      const url = resolve(request.url);
      const path = url.slice(stack.apiBaseUrl.length);
      const headers = Object.fromEntries(request.headers.map(([name, value]) => [name.toLowerCase(), resolve(value)]));
      const send = () => api(request.method, path, { headers, ...(request.body ? { body: resolve(request.body) } : {}) });
      let answer = await send();
      for (let attempt = 0; answer.status === 409 && path === '/rag/index' && attempt < 30; attempt++) {
        await sleep(1000);
        answer = await send();
      }
      expect(description.problems(request.method, path, answer), request.title).toEqual([]);
      expect(answer.status, `${request.title}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
      const key = headers['idempotency-key'];
      if (key !== undefined && createdByKey.has(key)) {
        expect({ id: answer.body.id, replayed: answer.headers.get('idempotent-replayed') }, request.title).toEqual({
          id: createdByKey.get(key),
          replayed: 'true',
        });
        replays++;
      } else if (key !== undefined) createdByKey.set(key, answer.body.id);
      if (request.name) {
        answers.set(request.name, answer);
        sentHeaders.set(request.name, headers);
      }
    }
    expect(replays, 'requests.http shows a create replayed by its Idempotency-Key').toBe(1);
  }, 60_000);
});
