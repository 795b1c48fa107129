/**
 * Headless Chromium for the browser tests: the machine's own (Debian's /usr/bin/chromium) when it has
 * one, otherwise the build that `@sparticuz/chromium` ships inside its npm package, so that
 * `npm install && npm test` needs nothing else on a fresh machine.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

const SYSTEM_CHROMIUM = '/usr/bin/chromium';

/**
 * Our own flags, not the package's: its defaults turn web security off, and the CORS tests need a
 * browser that enforces the same-origin policy. The network flags keep Chromium from calling home
 * on a machine without internet.
 */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

async function executablePath(): Promise<string> {
  if (existsSync(SYSTEM_CHROMIUM)) return SYSTEM_CHROMIUM;
  const { default: packaged } = await import('@sparticuz/chromium');
  return packaged.executablePath();
}

/** Runs `use` with a fresh browser profile, and removes the profile afterwards. */
export async function withBrowser<T>(use: (browser: BrowserContext) => Promise<T>): Promise<T> {
  const profile = await mkdtemp(join(tmpdir(), 'lms-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, { executablePath: await executablePath(), headless: true, args: FLAGS });
  try {
    return await use(browser);
  } finally {
    await browser.close();
    await rm(profile, { recursive: true, force: true });
  }
}
