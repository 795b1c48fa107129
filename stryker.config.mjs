// @ts-check
/**
 * Mutation testing of the modules that carry the API's guarantees (`npm run mutation`, see
 * docs/testing.md). Stryker 9.6 runs on Node 20 and 22 alike (10.x needs Node 22).
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts' },
  coverageAnalysis: 'perTest',
  mutate: [
    'shared/auth/*.ts',
    // The directory from Graph through On-Behalf-Of: paging, q as OData, cursors kept to Graph's users endpoint, Graph's failures as 400/403/502/503.
    'shared/graph/directory-users.ts',
    'shared/data/paging.ts',
    'shared/data/idempotency.ts',
    // Recorded users: written on first use and at most every 15 minutes unless the token changes, racing first calls, the list's order, filters and cursor.
    'shared/data/users-repository.ts',
    // Transactional batches: 100 operations and 1.5 MB a batch, in order; a missing delete done, the rest resent; other failures named; no endless 424s.
    'shared/data/batches.ts',
    'shared/domain/*.ts',
    'shared/webhooks/url-rules.ts',
    'shared/webhooks/signing.ts',
    'shared/webhooks/sender.ts',
    'shared/background/rag-queue.ts',
    // What the RAG index is made of: whole sentences, within the limit, none lost, with overlap.
    'shared/rag/chunker.ts',
    // The embeddings client: batches in order, retries within a budget, 429 handed back, no redirect followed, no key in an error.
    'shared/rag/embeddings.ts',
    'shared/data/rag-batches-repository.ts',
    // RAG index jobs: one active job a tenant (also when starts race), the finishing hold, cancel, the end with its event, the list.
    'shared/data/rag-jobs-repository.ts',
    // The tenant's one active RAG job: the lock read, taken and let go in the job's batches, a stale one released.
    'shared/data/rag-active-job.ts',
    'shared/http/body.ts',
    // If-Match and If-None-Match, the input rules and their wording, the caller's language.
    // A body's read ends at its request's deadline, though Node's fetch leaves it pending (nodejs/node#56917).
    'shared/lib/read-before.ts',
    'shared/http/etag.ts',
    'shared/schemas/validation.ts',
    'shared/http/language.ts',
    'shared/http/error-mapper.ts',
    // The HTTP edge: authentication first, query and path parameters, the answer the definition declares.
    'shared/http/endpoint.ts',
    // A body with no required field may be left out.
    'shared/http/operation-definition.ts',
    // The settings: a deployment missing one fails closed (the retry schedule and the embeddings endpoint checked too),
    // and each connection signs in as the identity its settings name.
    'shared/settings/read.ts',
    'shared/settings/connection-credential.ts',
    // What a committed change sets going, read from the change feed: events to their subscriptions, due deliveries, Queued RAG jobs.
    'shared/background/change-feed.ts',
    // Work on the storage queues as the triggers take it: base64 JSON, visible after its delay; a failing queue a DependencyUnavailableError;
    // the queue functions' one policy for a message that can never fit its queue.
    'shared/background/queues.ts',
    // The one conditional write (the change and its event together, 412, 404, retried races) and the readable ids' sequences.
    'shared/data/tenant-data.ts',
    'shared/data/sequence.ts',
    // Webhook delivery: claimed attempts and retries on the queue; the sweep (the hand-over is the change feed's, above).
    'shared/background/webhooks-queue.ts',
    'shared/background/webhooks-sweep.ts',
    // Reads as readers see them: the caller's tenant only, hidden documents left out, filters as parameters, cursors bound to their list.
    'shared/data/tenant-queries.ts',
    // The RAG index: each chunk in its (tenant, project) partition; every read and delete of the caller's tenant only.
    'shared/data/rag-index-repository.ts',
    // Webhook subscriptions: at most 20 a tenant (slots taken and freed in one batch), every secret of the last day signing, none lost to racing rotations.
    'shared/data/webhooks-repository.ts',
    // Webhook deliveries' store: made once an event and subscription (also when makers race), one claim an attempt under racing runs, retry, list, overdue.
    'shared/data/deliveries-repository.ts',
    // The events: written beside their change, kept a week; GET /api/events of the caller's tenant, newest first, filters and cursors, pings left out.
    'shared/data/events.ts',
    'shared/data/events-repository.ts',
    // Projects and tasks: readable ids, members, status moves, Archived read-only (also racing a task write), delete with its tasks, list filters and sorts.
    'shared/data/projects-repository.ts',
    'shared/data/tasks-repository.ts',
  ],
  ignorePatterns: ['dist', 'reports', '.local', 'coverage', 'clients', 'samples', 'bench'],
  reporters: ['json', 'clear-text', 'progress'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  tempDirName: 'reports/.stryker-tmp',
  cleanTempDir: 'always',
  concurrency: 2,
  timeoutMS: 10_000,
  thresholds: { high: 95, low: 90, break: 90 },
};
