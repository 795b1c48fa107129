/**
 * The C# client (clients/dotnet): its generated types, its xunit suite against this run's local stack
 * (once with the package's net10.0 build, once with its netstandard2.0 build, which .NET Framework
 * loads), and `dotnet pack`, which builds every target (net8.0's trimming and AOT analyzers
 * included) with warnings as errors and must give a package whose dependencies are the issue's.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { appRoot, outcome } from '../support/commands.js';
import { CLIENT_ID, HOME_TENANT, OTHER_TENANT, stack } from '../support/stack.js';

const folder = join(appRoot, 'clients', 'dotnet');
const tests = join(folder, 'tests', 'Lms.Platform.Api.Tests');
const library = join(folder, 'src', 'Lms.Platform.Api');
const temporary: string[] = [];
// No MSBuild node or compiler server outlives the run (each would linger for minutes after it).
const dotnetEnv = { ...process.env, DOTNET_CLI_TELEMETRY_OPTOUT: '1', DOTNET_NOLOGO: '1', MSBUILDDISABLENODEREUSE: '1', UseSharedCompilation: 'false' };

afterAll(async () => {
  for (const path of temporary) await rm(path, { recursive: true, force: true });
});

/** The suite against the stack, with the package's build for `target`. */
async function xunit(target: 'net10.0' | 'netstandard2.0') {
  const env = {
    ...dotnetEnv,
    LMS_TEST_API_BASE_URL: stack.apiBaseUrl,
    LMS_TEST_AUTHORITY_HOST: stack.authorityHost,
    LMS_TEST_CA_CERT: stack.caCertPath,
    LMS_TEST_CLIENT_ID: CLIENT_ID,
    LMS_TEST_HOME_TENANT: HOME_TENANT,
    LMS_TEST_OTHER_TENANT: OTHER_TENANT,
    LMS_TEST_CLIENT_TARGET: target,
  };
  const chosen = target === 'net10.0' ? [] : [`-p:ClientTarget=${target}`];
  const tested = await outcome('dotnet', ['test', tests, ...chosen, '--logger', 'console;verbosity=normal'], { cwd: folder, env });
  expect(tested.code, tested.output).toBe(0);
  // The console logger's closing lines: every test ran and passed, none was skipped.
  const total = Number(/^Total tests: (\d+)$/m.exec(tested.output)?.[1]);
  const passed = Number(/^\s+Passed: (\d+)$/m.exec(tested.output)?.[1]);
  expect(total, tested.output).toBeGreaterThan(50);
  expect(passed, tested.output).toBe(total);
}

describe('the C# client (clients/dotnet)', () => {
  it('has the types tools/csharp-types.ts generates from the current openapi.json', async () => {
    const checked = await outcome(process.execPath, ['dist/tools/write-csharp-types.js', '--check'], { cwd: appRoot });
    expect(checked.code, checked.output).toBe(0);
  });

  it('passes its xunit suite against the local stack, with the net10.0 build', { timeout: 900_000 }, () => xunit('net10.0'));

  it('passes its xunit suite against the local stack, with the netstandard2.0 build', { timeout: 900_000 }, () => xunit('netstandard2.0'));

  it('packs every target with warnings as errors, depending on nothing but what netstandard2.0 lacks', { timeout: 900_000 }, async () => {
    const output = await mkdtemp(join(tmpdir(), 'lms-dotnet-'));
    temporary.push(output);
    // Debug, as the suites built it: only net8.0 is left to build, with its trimming and AOT analyzers.
    const packed = await outcome('dotnet', ['pack', library, '-c', 'Debug', '-o', output], { cwd: folder, env: dotnetEnv });
    expect(packed.code, packed.output).toBe(0);

    const { version } = JSON.parse(await readFile(join(appRoot, 'openapi.json'), 'utf8')).info;
    expect(await readdir(output)).toEqual([`Lms.Platform.Api.${version}.nupkg`]);
    const zip = join(output, `Lms.Platform.Api.${version}.nupkg`);
    const listing = await outcome('python3', ['-m', 'zipfile', '-l', zip], { cwd: output });
    for (const target of ['netstandard2.0', 'net8.0', 'net10.0']) {
      expect(listing.output).toContain(`lib/${target}/Lms.Platform.Api.dll`);
      expect(listing.output).toContain(`lib/${target}/Lms.Platform.Api.xml`);
    }
    expect(listing.output).toContain('README.md');
    const read = "import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read('Lms.Platform.Api.nuspec').decode())";
    const nuspec = (await outcome('python3', ['-c', read, zip], { cwd: output })).output;
    expect(nuspec).toContain(`<version>${version}</version>`);
    const groups = Object.fromEntries(
      [...nuspec.matchAll(/<group targetFramework="([^"]+)"\s*(?:\/>|>([\s\S]*?)<\/group>)/g)].map(([, framework, body]) => [
        framework,
        [...(body ?? '').matchAll(/<dependency id="([^"]+)"/g)].map(([, id]) => id).sort(),
      ]),
    );
    expect(groups).toEqual({ '.NETStandard2.0': ['Microsoft.Bcl.AsyncInterfaces', 'System.Text.Json'], 'net8.0': [], 'net10.0': [] });
  });
});
