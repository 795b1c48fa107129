// `npm test` runs this first: the C# client's tests (clients/dotnet) need the .NET SDK, 10 or later
// (the package targets net10.0). Without it the run stops here with one line, rather than skipping them.
import { spawnSync } from 'node:child_process';

const found = spawnSync('dotnet', ['--version'], { encoding: 'utf8' });
const major = Number(/^(\d+)\./.exec(found.stdout ?? '')?.[1] ?? 0);
if (found.error || found.status !== 0 || major < 10) {
  const seen = found.error ? 'dotnet is not on PATH' : `dotnet --version says ${(found.stdout || found.stderr).trim() || 'nothing'}`;
  console.error(`npm test needs the .NET SDK 10 or later for the C# client's tests (clients/dotnet): ${seen}.`);
  process.exit(1);
}
