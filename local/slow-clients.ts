/**
 * The limits Azure's Functions host (ASP.NET Core's Kestrel) puts on slow clients, which a plain
 * Node server does not: without them one client trickling a body or its headers holds a request
 * open for minutes. Kestrel's defaults:
 *
 * - the request headers must have arrived within 30 s (`RequestHeadersTimeout`);
 * - a request body must arrive at 240 bytes/s or more on average once a 5 s grace period has passed
 *   (`MinRequestBodyDataRate`); a slower one gets 408 and its connection is closed;
 * - a keep-alive connection with no request is closed after 130 s (`KeepAliveTimeout`).
 *
 * In Azure the front end and its load balancer add their own (230 s for an answer, 4 minutes idle);
 * the host's are the tighter ones a client meets.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

const HEADERS_TIMEOUT_MS = 30_000;
const KEEP_ALIVE_TIMEOUT_MS = 130_000;
const MIN_BODY_BYTES_PER_SECOND = 240;
const BODY_GRACE_PERIOD_MS = 5_000;
/** How often Node checks its header timeout, and this module a body's rate: often enough that a limit holds to the second. */
export const SLOW_CLIENT_CHECK_INTERVAL_MS = 1_000;

/** The header and idle limits, on a server created with `connectionsCheckingInterval: SLOW_CLIENT_CHECK_INTERVAL_MS`. */
export function limitSlowClients(server: Server): void {
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  // Node's own limit on a whole request (5 minutes) stays off: the body's rate is what Kestrel checks.
  server.requestTimeout = 0;
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
}

/**
 * Watches a request's body as it arrives; one slower than the minimum rate is answered 408 and its
 * connection closed, whatever the function is doing with it. As in Kestrel, only the time the body is
 * being read counts: while a function leaves a streamed body unread (the stream paused), the client
 * is not the slow one.
 */
export function enforceMinimumBodyRate(request: IncomingMessage, response: ServerResponse): void {
  if (request.complete) return;
  const { socket } = request;
  const bytesBefore = socket.bytesRead;
  let readingMs = 0;
  let lastCheck = Date.now();
  const check = setInterval(() => {
    if (request.complete || socket.destroyed) {
      clearInterval(check);
      return;
    }
    const now = Date.now();
    if (!request.isPaused()) readingMs += now - lastCheck;
    lastCheck = now;
    if (readingMs < BODY_GRACE_PERIOD_MS || ((socket.bytesRead - bytesBefore) * 1000) / readingMs >= MIN_BODY_BYTES_PER_SECOND) return;
    clearInterval(check);
    // Closing the connection ends the body too: whoever reads it sees the request cut short.
    if (response.headersSent) socket.destroy();
    else response.writeHead(408, { Connection: 'close', 'Content-Length': '0' }).end(() => socket.destroy());
  }, SLOW_CLIENT_CHECK_INTERVAL_MS);
  check.unref();
}
