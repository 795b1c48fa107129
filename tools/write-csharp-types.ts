/**
 * `npm run openapi` (through `npm run client`): writes the C# client's types,
 * clients/dotnet/src/Lms.Platform.Api/Generated/, from openapi.json. `--check` writes nothing and
 * fails when a file there is not what the document gives.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { documentFile } from '../shared/http/served-document.js';
import { csharpTypes, type OpenApiDocument } from './csharp-types.js';

const source = documentFile();
const folder = join(dirname(source), 'clients', 'dotnet', 'src', 'Lms.Platform.Api', 'Generated');
const generated = csharpTypes(JSON.parse(await readFile(source, 'utf8')) as OpenApiDocument);
const files = { 'Schema.g.cs': generated.source, 'Version.props': generated.versionProps };

if (process.argv.includes('--check')) {
  for (const [name, text] of Object.entries(files)) {
    const target = join(folder, name);
    if ((await readFile(target, 'utf8').catch(() => '')) !== text) {
      console.error(`${relative(dirname(source), target)} is not what openapi.json gives: run \`npm run openapi\` and commit the result.`);
      process.exitCode = 1;
    }
  }
} else {
  await mkdir(folder, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    await writeFile(join(folder, name), text);
    console.log(`Wrote ${join(folder, name)}`);
  }
}
