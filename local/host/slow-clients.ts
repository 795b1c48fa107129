/** The limits Azure's Functions host (ASP.NET Core's Kestrel) puts on clients, which a plain Node server does not (docs/local-stack.md). */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';

// Kestrel's MinRequestBodyDataRate.
const MIN_BODY_BYTES_PER_SECOND = 240;
const BODY_GRACE_PERIOD_MS = 5_000;
// How often the header timeout and a body's rate are checked: often enough that a limit holds to the second.
const CHECK_INTERVAL_MS = 1_000;

/** A server with Kestrel's limits on headers and idle connections (Node's limit on a whole request off: Kestrel has none). */
export function createServerWithKestrelLimits(listener: RequestListener): Server {
  const limits = { maxHeaderSize: 32 * 1024, headersTimeout: 30_000, requestTimeout: 0, keepAliveTimeout: 130_000 };
  return createServer({ ...limits, connectionsCheckingInterval: CHECK_INTERVAL_MS }, listener);
}

/**
 * Watches a request's body as it arrives; one slower than the minimum rate is answered 408 and its
 * connection closed, whatever the function is doing with it. As in Kestrel, only the time the body is
 * being read counts: while a function leaves a streamed body unread (paused), the client is not the slow one.
 */
export function enforceMinimumBodyRate(request: IncomingMessage, response: ServerResponse): void {
  const hasBody = request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] !== undefined;
  if (!hasBody || request.complete) return;
  const { socket } = request;
  const bytesBefore = socket.bytesRead;
  let readingMs = 0;
  let lastCheck = Date.now();
  const check = setInterval(() => {
    if (request.complete || socket.destroyed) return clearInterval(check);
    const now = Date.now();
    if (!request.isPaused()) readingMs += now - lastCheck;
    lastCheck = now;
    if (readingMs < BODY_GRACE_PERIOD_MS || ((socket.bytesRead - bytesBefore) * 1000) / readingMs >= MIN_BODY_BYTES_PER_SECOND) return;
    clearInterval(check);
    // Closing the connection ends the body too: whoever reads it sees the request cut short.
    if (response.headersSent) socket.destroy();
    else response.writeHead(408, { Connection: 'close', 'Content-Length': '0' }).end(() => socket.destroy());
  }, CHECK_INTERVAL_MS).unref();
}
