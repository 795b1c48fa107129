// `npm start` runs this before it builds: when the API's port is taken, most likely by an `npm start`
// of this checkout, it stops with one line naming PORT, rather than rebuild dist/ under the stack
// running from it. Without a build there is no stack of this checkout to disturb (start.js checks again).
import { existsSync } from 'node:fs';
import { URL } from 'node:url';

const ports = new URL('../dist/local/ports.js', import.meta.url);
if (existsSync(ports)) {
  const { stopIfApiPortTaken } = await import(ports.href);
  await stopIfApiPortTaken();
}
