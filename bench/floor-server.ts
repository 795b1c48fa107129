/**
 * The floor: a bare node:http server doing only the unavoidable work of each benchmarked request
 * (bench/floor-work.ts), to measure the API against. Run as a child process with the same settings
 * and certificate trust as the local host.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { floorWork } from './floor-work.js';

const server = createServer((request, response) => void serve(request, response));

async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const answer = await floorWork({
    method: request.method ?? 'GET',
    url: new URL(request.url ?? '/', 'http://floor'),
    authorization: request.headers.authorization,
    async text() {
      let text = '';
      for await (const chunk of request) text += chunk;
      return text;
    },
  });
  response.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(answer.document));
}

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.send?.({ port: typeof address === 'object' && address ? address.port : 0 });
});
process.on('disconnect', () => process.exit(0));
