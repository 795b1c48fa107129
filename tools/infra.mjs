// `npm run infra` (part of `npm test`): builds infra/main.bicep to dist/infra/main.json and lints it, failing on
// any finding (bicepconfig.json makes every rule an error), then takes snapshots of the deployment: the resources
// `azd provision` would create, evaluated by Bicep with main.parameters.json's values as azd substitutes them, in
// each environment of tools/bicep/snapshots.json. The tests of test/infra/ read the template and the snapshots.
// The Bicep CLI is a NuGet package that tools/bicep/bicep.proj restores. One `bicep jsonrpc` process does it all:
// its `bicep/compile` is `bicep build` (the same compilation and template) with the diagnostics `bicep lint` reports
// (compiler and linter, every file), and each CLI process costs seconds of start-up.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { arch, homedir, platform } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, URL } from 'node:url';
import { promisify } from 'node:util';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const project = join(root, 'tools', 'bicep', 'bicep.proj');
const assetsFile = join(root, 'tools', 'bicep', 'obj', 'project.assets.json');
const out = join(root, 'dist', 'infra');
// The azd environments the snapshots are taken in (the tests read them too), and the subscription they are taken for.
const { environments, tenantId, subscriptionId } = JSON.parse(await readFile(join(root, 'tools', 'bicep', 'snapshots.json'), 'utf8'));

/** The NuGet runtime id of this machine, which names the CLI's package. */
function runtimeId() {
  const os = { linux: 'linux', darwin: 'osx', win32: 'win' }[platform()];
  const cpu = { x64: 'x64', arm64: 'arm64' }[arch()];
  if (!os || !cpu) throw new Error(`No Bicep CLI package for ${platform()} ${arch()}`);
  return `${os}-${cpu}`;
}

/** The CLI's path, restoring its package first unless the restore is newer than the project file. */
async function bicepCli() {
  const runtime = runtimeId();
  const stale = !existsSync(assetsFile) || statSync(assetsFile).mtimeMs < statSync(project).mtimeMs;
  const download = (assets) => assets?.project.frameworks['net10.0'].downloadDependencies.find((dependency) => dependency.name.endsWith(runtime));
  let parsed = stale ? undefined : JSON.parse(await readFile(assetsFile, 'utf8'));
  if (!download(parsed)) {
    await run('dotnet', ['restore', project, `-p:BicepRuntime=${runtime}`, '--verbosity', 'quiet']);
    parsed = JSON.parse(await readFile(assetsFile, 'utf8'));
  }
  const { name, version } = download(parsed);
  const folder = Object.keys(parsed.packageFolders)[0] ?? join(homedir(), '.nuget', 'packages');
  return join(folder, name.toLowerCase(), version.replace(/^\[([^,\]]+).*$/, '$1'), 'tools', platform() === 'win32' ? 'bicep.exe' : 'bicep');
}

/** A .bicepparam file with main.parameters.json's values as azd substitutes them in `environment`, typed as main.json declares. */
async function snapshotParameters(environment, template) {
  const { parameters } = JSON.parse(await readFile(join(root, 'infra', 'main.parameters.json'), 'utf8'));
  const lines = [`using '../../infra/main.bicep'`];
  for (const [name, { value }] of Object.entries(parameters)) {
    // azd's `${NAME}` and `${NAME=default}`: the environment's value, else the default, else empty.
    const text = value.replace(/\$\{(\w+)(?:=([^}]*))?\}/g, (_, variable, fallback) => environment[variable] ?? fallback ?? '');
    const type = template.parameters[name].type.toLowerCase();
    const literal = type === 'bool' ? String(text === 'true') : type === 'int' ? String(Number(text)) : `'${text.replace(/[\\']/g, '\\$&')}'`;
    lines.push(`param ${name} = ${literal}`);
  }
  // azd generates what a parameter's metadata asks it to (`type: 'generate'`), once per environment.
  for (const [name, { metadata }] of Object.entries(template.parameters)) {
    const { type, config } = metadata?.azd ?? {};
    const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
    if (type === 'generate') lines.push(`param ${name} = '${Array.from(randomBytes(config.length), (byte) => letters[byte % letters.length]).join('')}'`);
  }
  return `${lines.join('\n')}\n`;
}

const started = Date.now();
await mkdir(out, { recursive: true });
const bicep = spawn(await bicepCli(), ['jsonrpc', '--stdio'], { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
const connection = createMessageConnection(new StreamMessageReader(bicep.stdout), new StreamMessageWriter(bicep.stdin));
connection.listen();
try {
  const template = join(root, 'infra', 'main.bicep');
  const { success, diagnostics, contents } = await connection.sendRequest('bicep/compile', { path: template });
  if (diagnostics.length) {
    const where = ({ source, range }) => `${source.replace(/^file:\/\//, '')}(${range.start.line + 1},${range.start.char + 1})`;
    throw new Error(`Bicep reported:\n${diagnostics.map((finding) => `${where(finding)}: ${finding.level} ${finding.code}: ${finding.message}`).join('\n')}`);
  }
  if (!success) throw new Error('Bicep could not build infra/main.bicep');
  await writeFile(join(out, 'main.json'), contents);
  const compiled = JSON.parse(contents);
  for (const [name, environment] of Object.entries(environments)) {
    const file = join(out, `${name}.bicepparam`);
    await writeFile(file, await snapshotParameters(environment, compiled));
    const metadata = { tenantId, subscriptionId, location: environment.AZURE_LOCATION, deploymentName: `azd-${name}` };
    const { snapshot } = await connection.sendRequest('bicep/getSnapshot', { path: file, metadata });
    await writeFile(join(out, `${name}.snapshot.json`), snapshot);
  }
} finally {
  connection.dispose();
  bicep.kill();
}
console.log(`infra/: built, linted and snapshotted in ${((Date.now() - started) / 1000).toFixed(1)} s`);
