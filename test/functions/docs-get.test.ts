/** The reference page, as the worker calls its function: the links it holds are paths on the API's own host, whatever the request named. */
import functions from '@azure/functions';
import { describe, expect, it } from 'vitest';
import { docsGet } from '../../functions/docs-get.js';

const { HttpRequest, InvocationContext } = functions;

async function page(url: string): Promise<string> {
  const answer = await docsGet(new HttpRequest({ method: 'GET', url }), new InvocationContext({ invocationId: 'docs-1' }));
  expect(typeof answer.body).toBe('string');
  return answer.body as string;
}

describe('GET /api/docs', () => {
  it('links its files and the document by paths from the root, never by a host or by a path that starts with //', async () => {
    for (const url of ['https://evil.example/api/docs', 'http://localhost//api//docs/', 'http://localhost/api/docs']) {
      const html = await page(url);
      const links = [...html.matchAll(/(?:href|src|data-document-url)="([^"]*)"/g)].map(([, link]) => link);
      expect(links, url).toEqual([
        '/api/docs/swagger-ui.css',
        '/api/docs/favicon-32x32.png',
        '/api/openapi.json',
        '/api/docs/swagger-ui-bundle.js',
        '/api/docs/start.js',
      ]);
    }
  });
});
