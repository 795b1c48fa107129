import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSampleServer } from '../../tools/sample-server.js';
import { startHostProcess } from '../../local/stack.js';
import { withBrowser } from '../support/browser.js';
import { freePort } from '../support/own-hosts.js';
import { CLIENT_ID, HOME_TENANT, OTHER_TENANT, stack, stackAppSettings, token } from '../support/stack.js';

type Host = Awaited<ReturnType<typeof startHostProcess>>;
type SampleServer = Awaited<ReturnType<typeof startSampleServer>>;

/** The task-pane sample in a fresh page, outside Office: office.js cannot load here, as on a machine offline. */
async function openSample(browser: BrowserContext, pageOrigin: string): Promise<{ page: Page; pageErrors: string[] }> {
  await browser.route('https://appsforoffice.microsoft.com/**', (route) => route.abort());
  const page = await browser.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.goto(`${pageOrigin}/`);
  return { page, pageErrors };
}

const statusOf = (page: Page) => page.locator('#status').textContent();

describe('an add-in page of another origin calls the API from headless Chromium', () => {
  let host: Host;
  let allowedPage: SampleServer;
  let strangerPage: SampleServer;
  let apiBaseUrl: string;
  let allowedOrigin: string;
  let strangerOrigin: string;

  beforeAll(async () => {
    // The page's port comes first: the host's CORS setting names its origin.
    const allowedPort = await freePort();
    allowedOrigin = `http://127.0.0.1:${allowedPort}`;
    host = await startHostProcess({
      port: 0,
      environment: { ...stackAppSettings, CORS_ALLOWED_ORIGINS: allowedOrigin },
      extraCaCerts: stack.caCertPath,
    });
    apiBaseUrl = `http://127.0.0.1:${host.port}/api`;
    // The sample's token comes from the identity provider's token endpoint, as with `npm run sample`.
    const identityProvider = { authorityHost: stack.authorityHost, tenants: [HOME_TENANT, OTHER_TENANT], clientId: CLIENT_ID, caCertPath: stack.caCertPath };
    allowedPage = await startSampleServer({ port: allowedPort, host: '127.0.0.1', apiBaseUrl, identityProvider });
    strangerPage = await startSampleServer({ port: 0, host: '127.0.0.1', apiBaseUrl, identityProvider });
    strangerOrigin = `http://127.0.0.1:${strangerPage.port}`;
  });
  afterAll(async () => {
    await Promise.all([allowedPage?.close(), strangerPage?.close(), host?.stop()]);
  });

  it('the task-pane sample lists and creates projects from an allowed origin, and reads ETag and Location', { timeout: 90_000 }, async () => {
    await withBrowser(async (browser) => {
      const { page, pageErrors } = await openSample(browser, allowedOrigin);
      await expect.poll(() => statusOf(page), { timeout: 30_000 }).toMatch(/projects shown\.$/);
      expect(await page.locator('#token-source').textContent()).toBe(`Not in Office: the token comes from ${allowedOrigin}/token.`);

      await page.fill('#name', `Task pane ${crypto.randomUUID().slice(0, 8)}`);
      await page.click('#create button');
      await expect.poll(() => statusOf(page), { timeout: 30_000 }).toMatch(/^Created PRJ-\d+\.$/);

      const id = (await page.locator('#created-id').textContent())!;
      const etag = (await page.locator('#created-etag').textContent())!;
      expect(await page.locator('#created-location').textContent()).toBe(`${apiBaseUrl}/projects/${id}`);
      expect(await page.locator(`#projects li[data-id="${id}"]`).count()).toBe(1);
      // The ETag the page read is the project's own, as the API gives it to any reader.
      const read = await fetch(`${apiBaseUrl}/projects/${id}`, { headers: { authorization: `Bearer ${await token({ roles: ['LMS.Reader'] })}` } });
      expect(read.headers.get('etag')).toBe(etag);

      // The page's own JavaScript may send If-None-Match and read what a 304 carries.
      const revalidated = await page.evaluate(
        async ({ url, etag }) => {
          const { access_token } = (await (await fetch('token', { method: 'POST' })).json()) as { access_token: string };
          const response = await fetch(url, { headers: { Authorization: `Bearer ${access_token}`, 'If-None-Match': etag } });
          return { status: response.status, etag: response.headers.get('ETag'), requestId: response.headers.get('X-Request-Id') };
        },
        { url: `${apiBaseUrl}/projects/${id}`, etag },
      );
      expect(revalidated).toEqual({ status: 304, etag, requestId: expect.any(String) });
      expect(pageErrors).toEqual([]);
    });
  });

  it('a page of an origin the API does not allow gets nothing: the browser rejects its fetch with a TypeError', { timeout: 90_000 }, async () => {
    await withBrowser(async (browser) => {
      const { page } = await openSample(browser, strangerOrigin);
      await expect.poll(() => statusOf(page), { timeout: 30_000 }).toMatch(/^The API cannot be reached from this page/);

      const refusals = await page.evaluate(async (projectsUrl) => {
        const { access_token } = (await (await fetch('token', { method: 'POST' })).json()) as { access_token: string };
        const refusal = (request: Promise<Response>) =>
          request.then(
            (response) => `answered ${response.status}`,
            (error: Error) => error.name,
          );
        return {
          // A simple request goes out without a preflight; the browser withholds its answer.
          simple: await refusal(fetch(projectsUrl)),
          // With a token it needs a preflight first, which the API answers without allowing the origin.
          withToken: await refusal(fetch(projectsUrl, { headers: { Authorization: `Bearer ${access_token}` } })),
        };
      }, `${apiBaseUrl}/projects`);
      expect(refusals).toEqual({ simple: 'TypeError', withToken: 'TypeError' });
      expect(await page.locator('#projects li').count()).toBe(0);
    });
  });
});
