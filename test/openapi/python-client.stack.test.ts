/**
 * The Python client (clients/python): its generated types, its install with pip, its types under
 * pyright for Python 3.9, and its own unittest suite, run against this run's local stack.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { appRoot, outcome } from '../support/commands.js';
import { CLIENT_ID, HOME_TENANT, OTHER_TENANT, stack } from '../support/stack.js';

const folder = join(appRoot, 'clients', 'python');
const PYTHON = 'python3';
const temporary: string[] = [];

afterAll(async () => {
  for (const path of temporary) await rm(path, { recursive: true, force: true });
});

describe('the Python client (clients/python)', () => {
  it('has the types tools/python-types.ts generates from the current openapi.json', async () => {
    const checked = await outcome(process.execPath, ['dist/tools/write-python-types.js', '--check'], { cwd: appRoot });
    expect(checked.code, checked.output).toBe(0);
  });

  it(
    'installs with pip from its folder, with no package index and no build isolation, as the same files and the API version',
    { timeout: 120_000 },
    async () => {
      const target = await mkdtemp(join(tmpdir(), 'lms-python-'));
      temporary.push(target);
      const pip = ['-m', 'pip', 'install', '--no-index', '--no-build-isolation', '--disable-pip-version-check'];
      const installed = await outcome(PYTHON, [...pip, '--target', target, folder], { cwd: appRoot });
      expect(installed.code, installed.output).toBe(0);

      const { version } = JSON.parse(await readFile(join(appRoot, 'openapi.json'), 'utf8')).info;
      const metadata = await readFile(join(target, `lms_platform_api-${version}.dist-info`, 'METADATA'), 'utf8');
      expect(metadata).toContain(`\nVersion: ${version}\n`);
      const sources = (await readdir(join(folder, 'lms_platform_api'))).filter((name) => name !== '__pycache__').sort();
      const copies = (await readdir(join(target, 'lms_platform_api'))).filter((name) => name !== '__pycache__').sort();
      expect(copies).toEqual(sources);
      expect(copies).toContain('py.typed');
      for (const name of sources) {
        expect(await readFile(join(target, 'lms_platform_api', name), 'utf8'), name).toBe(await readFile(join(folder, 'lms_platform_api', name), 'utf8'));
      }
    },
  );

  it('type-checks under pyright for Python 3.9, strict for the package', { timeout: 120_000 }, async () => {
    const checked = await outcome(join(appRoot, 'node_modules', '.bin', 'pyright'), ['-p', folder], { cwd: folder });
    expect(checked.code, checked.output).toBe(0);
  });

  it('passes its unittest suite against the local stack', { timeout: 600_000 }, async () => {
    const env = {
      ...process.env,
      PYTHONDONTWRITEBYTECODE: '1',
      LMS_TEST_API_BASE_URL: stack.apiBaseUrl,
      LMS_TEST_AUTHORITY_HOST: stack.authorityHost,
      LMS_TEST_CA_CERT: stack.caCertPath,
      LMS_TEST_CLIENT_ID: CLIENT_ID,
      LMS_TEST_HOME_TENANT: HOME_TENANT,
      LMS_TEST_OTHER_TENANT: OTHER_TENANT,
    };
    const tested = await outcome(PYTHON, ['-m', 'unittest', '-v'], { cwd: folder, env });
    expect(tested.code, tested.output).toBe(0);
    expect(tested.output).toMatch(/^Ran \d+ tests in /m);
    expect(tested.output).not.toMatch(/skipped/);
  });
});
