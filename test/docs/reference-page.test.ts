import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { stack } from '../support/stack.js';

// Debian's chromium; CI installs it when it is missing (.ci/run), so its absence fails the test.
const CHROMIUM = '/usr/bin/chromium';
const SANDBOX_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

describe('the API reference page (/api/docs) in headless Chromium', () => {
  it('loads from the API alone, lists every operation of the document and logs no error', { timeout: 90_000 }, async () => {
    expect(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium`).toBe(true);
    const document = (await (await fetch(`${stack.apiBaseUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(document.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));

    const profile = await mkdtemp(join(tmpdir(), 'lms-chromium-'));
    const browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: SANDBOX_FLAGS });
    try {
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
      const listed = await page.locator('.opblock-summary').evaluateAll((summaries) =>
        summaries.map((summary) => `${summary.querySelector('.opblock-summary-method')?.textContent} ${summary.querySelector('.opblock-summary-path')?.getAttribute('data-path')}`),
      );

      expect(listed.sort()).toEqual(documented.sort());
      expect(await page.locator('.info .title').textContent()).toContain('LMS Platform API');
      expect([...origins].filter((origin) => origin !== new URL(stack.apiBaseUrl).origin && origin !== 'null')).toEqual([]);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
      await rm(profile, { recursive: true, force: true });
    }
  });
});
