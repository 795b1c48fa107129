/**
 * Makes an embedded server keep idle connections open for as long as its clients do. Node's default
 * closes them after 5 s, which races a client's reuse of a pooled connection: when the client's event
 * loop lags, it writes to a socket the server has just closed, and the request fails with ECONNRESET
 * or "socket hang up". Clients do not retry a failed write (the Cosmos SDK retries only reads), so on
 * a busy machine a healthy local stack would answer 503. Azure's services keep idle connections for
 * minutes, so this is also the closer match.
 */
export function keepIdleConnectionsOpen<S extends { keepAliveTimeout: number }>(server: S): S {
  server.keepAliveTimeout = 0;
  return server;
}
