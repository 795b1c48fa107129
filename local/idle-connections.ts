/**
 * Makes an embedded server keep idle connections open, as Azure's services do for minutes. Node's default
 * closes them after 5 s, racing a client's reuse of a pooled connection on a busy machine: the client's
 * write then fails with ECONNRESET, which clients do not retry (the Cosmos SDK retries only reads).
 */
export function keepIdleConnectionsOpen<S extends { keepAliveTimeout: number }>(server: S): S {
  server.keepAliveTimeout = 0;
  return server;
}
