import { describe, expect, it } from 'vitest';
import { withBrowser } from '../support/browser.js';
import { stack } from '../support/stack.js';

describe('the API reference page (/api/docs) in headless Chromium', () => {
  it('loads from the API alone, lists every operation and webhook of the document and logs no error', { timeout: 90_000 }, async () => {
    type Items = Record<string, Record<string, unknown>>;
    const document = (await (await fetch(`${stack.apiBaseUrl}/openapi.json`)).json()) as { paths: Items; webhooks: Items };
    // Swagger UI lists what the API sends to receivers (OpenAPI 3.1's webhooks) as operations too, by name.
    const documented = [...Object.entries(document.paths), ...Object.entries(document.webhooks)].flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );

    await withBrowser(async (browser) => {
      const page = browser.pages()[0] ?? (await browser.newPage());
      const problems: string[] = [];
      const origins = new Set<string>();
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(`console: ${message.text()}`);
      });
      page.on('pageerror', (error) => problems.push(`page: ${error.message}`));
      page.on('requestfailed', (request) => problems.push(`failed: ${request.url()}`));
      page.on('request', (request) => origins.add(new URL(request.url()).origin));
      page.on('response', (response) => {
        if (response.status() >= 400) problems.push(`${response.status()}: ${response.url()}`);
      });

      const answer = await page.goto(`${stack.apiBaseUrl}/docs`);
      expect(answer?.status()).toBe(200);
      await page
        .locator('.opblock')
        .first()
        .waitFor({ timeout: 30_000 })
        .catch((error: Error) => {
          throw new Error(`Swagger UI listed no operation: ${error.message}\n${problems.join('\n')}`);
        });
      const listed = await page
        .locator('.opblock-summary')
        .evaluateAll((summaries) =>
          summaries.map(
            (summary) =>
              `${summary.querySelector('.opblock-summary-method')?.textContent} ${summary.querySelector('.opblock-summary-path')?.getAttribute('data-path')}`,
          ),
        );

      expect(listed.sort()).toEqual(documented.sort());
      expect(await page.locator('.info .title').textContent()).toContain('LMS Platform API');
      expect([...origins].filter((origin) => origin !== new URL(stack.apiBaseUrl).origin && origin !== 'null')).toEqual([]);
      expect(problems).toEqual([]);
    });
  });
});
