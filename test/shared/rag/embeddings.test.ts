import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { standInEmbedding, startEmbeddingsStandIn, type EmbeddingsStandIn } from '../../support/embeddings-stand-in.js';
import { startSmallServer, type SmallServer } from '../../support/small-server.js';
import {
  createEmbedder,
  EmbeddingsRequestError,
  EmbeddingsThrottledError,
  EmbeddingsUnavailableError,
  type EmbedderOptions,
} from '../../../shared/rag/embeddings.js';
import type { EmbeddingsSettings } from '../../../shared/settings/read.js';

const API_KEY = 'sk-local-test-key-0123456789';
const MODEL = 'text-embedding-3-small';
const AZURE_ENDPOINT = 'https://contoso.openai.azure.com/openai/deployments/embeddings-small/embeddings?api-version=2024-10-21';

const texts = (count: number) => Array.from({ length: count }, (_, index) => `Chunk ${index + 1}: 会議の議事録 and notes`);

describe('embeddings client against the stand-in', () => {
  let standIn: EmbeddingsStandIn;
  let waits: number[];
  const openAi = (overrides: Partial<EmbeddingsSettings> = {}): EmbeddingsSettings => ({ endpoint: standIn.url, apiKey: API_KEY, model: MODEL, ...overrides });
  /** An embedder whose waits are recorded instead of waited. */
  const embedder = (settings: EmbeddingsSettings, options: EmbedderOptions = {}) =>
    createEmbedder(settings, {
      sleep: async (milliseconds) => {
        waits.push(milliseconds);
      },
      ...options,
    });
  /** Sends what the client addressed to a real service's host to the stand-in, headers and query untouched. */
  const viaStandIn: typeof fetch = (input, init) => {
    const target = new URL(input instanceof Request ? input.url : String(input));
    return fetch(new URL(`${target.pathname}${target.search}`, standIn.url), init);
  };

  beforeEach(async () => {
    standIn = await startEmbeddingsStandIn({ apiKey: API_KEY });
    waits = [];
  });

  afterEach(async () => {
    await standIn.close();
  });

  it('sends batches and returns the vectors in input order', async () => {
    const inputs = texts(40);
    const vectors = await embedder(openAi(), { batchSize: 16 }).embed(inputs);

    expect(vectors).toEqual(inputs.map((text) => standInEmbedding(text)));
    expect(standIn.received.map((request) => request.inputs?.length)).toEqual([16, 16, 8]);
    expect(standIn.counts).toEqual({ requests: 3, inputs: 40 });
    expect(standIn.received[0]).toMatchObject({ path: '/v1/embeddings', query: '', authorization: 'bearer', model: MODEL, status: 200 });
  });

  it('batches by 16 by default and sends nothing for no texts', async () => {
    await embedder(openAi()).embed(texts(17));
    expect(standIn.received.map((request) => request.inputs?.length)).toEqual([16, 1]);
    expect(await embedder(openAi()).embed([])).toEqual([]);
    expect(standIn.counts.requests).toBe(2);
  });

  it('posts to a full Azure OpenAI deployment URL as given, keeping its query', async () => {
    const inputs = texts(3);
    const vectors = await embedder({ endpoint: standIn.azureUrl('embeddings-small'), apiKey: API_KEY }).embed(inputs);

    expect(vectors).toEqual(inputs.map((text) => standInEmbedding(text)));
    expect(standIn.received).toEqual([
      {
        path: '/openai/deployments/embeddings-small/embeddings',
        query: '?api-version=2024-10-21',
        authorization: 'bearer',
        inputs,
        model: undefined,
        status: 200,
      },
    ]);
  });

  it.each([
    [AZURE_ENDPOINT, 'api-key', '/openai/deployments/embeddings-small/embeddings', '?api-version=2024-10-21'],
    [
      'https://contoso.cognitiveservices.azure.com/openai/deployments/small/embeddings?api-version=2024-10-21',
      'api-key',
      '/openai/deployments/small/embeddings',
      '?api-version=2024-10-21',
    ],
    ['https://api.openai.com/v1//', 'bearer', '/v1/embeddings', ''],
  ])('for %s sends the key as %s', async (endpoint, authorization, path, query) => {
    await embedder({ endpoint, apiKey: API_KEY, model: MODEL }, { fetch: viaStandIn }).embed(['one']);
    expect(standIn.received).toEqual([expect.objectContaining({ authorization, path, query, status: 200 })]);
  });

  it('ends the call at once on a 429, with the Retry-After delay and the vectors embedded before it', async () => {
    let requests = 0;
    // The second request is the one throttled: the first one's vectors come back with the error.
    const throttleSecond: typeof fetch = (input, init) => {
      if (++requests === 2) standIn.failNext(1, 429, 3);
      return fetch(input, init);
    };
    const failure = await embedder(openAi(), { batchSize: 1, fetch: throttleSecond })
      .embed(['first', 'second', 'third'])
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(EmbeddingsThrottledError);
    expect(failure).toMatchObject({
      name: 'EmbeddingsThrottledError',
      retryAfterMs: 3_000,
      done: [standInEmbedding('first')],
      message: `Embeddings endpoint ${standIn.url}/embeddings throttled: Rate limit reached for requests. Please try again later.`,
    });
    expect(waits).toEqual([]);
    expect(standIn.received.map((request) => request.status)).toEqual([200, 429]);
  });

  it("prefers Azure's retry-after-ms, and caps every wait", async () => {
    const azure = embedder({ endpoint: standIn.azureUrl('small'), apiKey: API_KEY });
    standIn.failNext(1, 503, 1.5);
    await azure.embed(['overloaded']);
    standIn.failNext(1, 503, 120);
    await azure.embed(['overloaded for long']);
    standIn.failNext(1, 429, 1.5);
    const throttled = await azure.embed(['throttled']).catch((error: unknown) => error);
    standIn.failNext(1, 429, 86_400);
    const throttledForLong = await azure.embed(['throttled for a day']).catch((error: unknown) => error);

    expect(waits).toEqual([1_500, 20_000]);
    expect(throttled).toMatchObject({ retryAfterMs: 1_500 });
    expect(throttledForLong).toMatchObject({ retryAfterMs: 600_000 });
  });

  it('backs off exponentially, with jitter, when the service does not say how long', async () => {
    standIn.failNext(3, 503);
    await embedder(openAi()).embed(['overloaded']);

    expect(waits).toHaveLength(3);
    waits.forEach((wait, index) => {
      expect(wait).toBeGreaterThanOrEqual(375 * 2 ** index);
      expect(wait).toBeLessThanOrEqual(625 * 2 ** index);
    });
  });

  it('retries a dropped connection like an unavailable service', async () => {
    standIn.failNext(1, 'drop');
    expect(await embedder(openAi()).embed(['dropped'])).toEqual([standInEmbedding('dropped')]);
    expect(standIn.counts.requests).toBe(2);
  });

  it('gives up after the attempt budget with EmbeddingsUnavailableError', async () => {
    standIn.failNext(100, 503, 1);
    const failure = await embedder(openAi())
      .embed(['never'])
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(EmbeddingsUnavailableError);
    expect(failure).toMatchObject({
      name: 'EmbeddingsUnavailableError',
      attempts: 6,
      message: `Gave up after attempt 6: embeddings endpoint ${standIn.url}/embeddings answered 503: The server is overloaded or not ready yet.`,
    });
    expect((failure as Error).cause).toBeInstanceOf(EmbeddingsRequestError);
    expect((failure as Error).cause).toMatchObject({
      name: 'EmbeddingsRequestError',
      status: 503,
      message: `Embeddings endpoint ${standIn.url}/embeddings answered 503: The server is overloaded or not ready yet.`,
    });
    expect(standIn.counts.requests).toBe(6);
    expect(waits).toEqual([1_000, 1_000, 1_000, 1_000, 1_000]);
  });

  it('gives up with the vectors embedded before the request that kept failing', async () => {
    let requests = 0;
    const failSecond: typeof fetch = (input, init) => {
      if (++requests === 2) standIn.failNext(100, 503, 1);
      return fetch(input, init);
    };
    const failure = await embedder(openAi(), { batchSize: 1, maxAttempts: 2, fetch: failSecond })
      .embed(['first', 'second', 'third'])
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(EmbeddingsUnavailableError);
    expect(failure).toMatchObject({ attempts: 2, done: [standInEmbedding('first')] });
  });

  it('gives up on requests that time out', async () => {
    const hanging: typeof fetch = (_input, init) =>
      new Promise((_resolve, reject) => {
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason as Error));
      });
    const failure = await embedder(openAi(), { fetch: hanging, requestTimeoutMs: 20, maxAttempts: 2 })
      .embed(['slow'])
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(EmbeddingsUnavailableError);
    expect((failure as Error).message).toMatch(/^Gave up after attempt 2: embeddings endpoint .* could not be reached \(timed out\)$/);
  });

  it('fails at once on a 400, with the status and the API message', async () => {
    const failure = await embedder(openAi({ model: undefined }))
      .embed(['no model'])
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(EmbeddingsRequestError);
    expect(failure).toMatchObject({ status: 400, message: expect.stringContaining('refused the request with 400: you must provide a model parameter') });
    expect(standIn.counts.requests).toBe(1);
    expect(waits).toEqual([]);
  });

  it('fails at once on a wrong key, without the key in the error', async () => {
    const wrongKey = 'sk-wrong-key-abcdefghijklmnop';
    const failure = await embedder(openAi({ apiKey: wrongKey }))
      .embed(['hello'])
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(EmbeddingsRequestError);
    expect(failure).toMatchObject({
      status: 401,
      message: `Embeddings endpoint ${standIn.url}/embeddings refused the request with 401: Incorrect API key provided: [redacted]`,
    });
    // The stand-in echoes the key masked as OpenAI does, both ends showing.
    for (const part of [wrongKey, wrongKey.slice(-4)]) expect(`${(failure as Error).message}\n${(failure as Error).stack}`).not.toContain(part);
    expect(standIn.counts.requests).toBe(1);
  });
});

describe('embeddings client against an endpoint that misbehaves', () => {
  let server: SmallServer;
  /** How the server answers the next requests, one entry each; the last one stays. */
  let answers: ((response: ServerResponse) => void)[];
  let requests: { at: number; headers: IncomingHttpHeaders }[];
  let waits: number[];
  const endpoint = () => `${server.url}/v1`;
  const where = () => `${server.url}/v1/embeddings`;
  const embedder = (options: EmbedderOptions = {}, settings: Partial<EmbeddingsSettings> = {}) =>
    createEmbedder({ endpoint: endpoint(), apiKey: API_KEY, ...settings }, { sleep: async (milliseconds) => void waits.push(milliseconds), ...options });
  const json =
    (status: number, body: unknown, headers: Record<string, string> = {}) =>
    (response: ServerResponse) =>
      response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(typeof body === 'string' ? body : JSON.stringify(body));
  const embeddings = (data: unknown) => json(200, { object: 'list', data, model: MODEL });
  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => expect.unreachable(),
      (error: unknown) => error as Error,
    );

  beforeAll(async () => {
    server = await startSmallServer((request, response) => {
      requests.push({ at: performance.now(), headers: request.headers });
      (answers.length > 1 ? answers.shift()! : answers[0]!)(response);
    });
  });
  afterAll(() => server.close());
  beforeEach(() => {
    requests = [];
    waits = [];
  });

  it('asks for JSON in JSON, and sends no key when it has none', async () => {
    answers = [embeddings([{ index: 0, embedding: [0.5] }])];
    await embedder({}, { apiKey: undefined }).embed(['one']);
    expect(requests[0]!.headers).toMatchObject({ 'content-type': 'application/json', accept: 'application/json' });
    expect(requests[0]!.headers).not.toHaveProperty('authorization');
    expect(requests[0]!.headers).not.toHaveProperty('api-key');
  });

  it('orders the vectors by index, however the answer lists them', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 12 }).chain((count) => fc.shuffledSubarray([...Array(count).keys()], { minLength: count })),
        async (order) => {
          answers = [embeddings(order.map((index) => ({ index, embedding: [index, index + 0.5] })))];
          const vectors = await embedder({ batchSize: 12 }).embed(texts(order.length));
          expect(vectors).toEqual(order.map((_, index) => [index, index + 0.5]));
        },
      ),
      { numRuns: 40 },
    );
  });

  it.each([
    ['a body that is not JSON', '<html>ok</html>'],
    ['no data', {}],
    ['data that is not a list', { data: { 0: { index: 0, embedding: [1] } } }],
    ['one vector for two inputs', { data: [{ index: 0, embedding: [1] }] }],
    ['three vectors for two inputs', { data: [0, 1, 2].map((index) => ({ index, embedding: [1] })) }],
    ['an index twice', { data: [0, 0].map((index) => ({ index, embedding: [1] })) }],
    ['an index past the inputs', { data: [0, 2].map((index) => ({ index, embedding: [1] })) }],
    ['a negative index', { data: [-1, 1].map((index) => ({ index, embedding: [1] })) }],
    ['an index that is not an integer', { data: [0, 0.5].map((index) => ({ index, embedding: [1] })) }],
    ['an index as a string', { data: ['0', '1'].map((index) => ({ index, embedding: [1] })) }],
    ['an item that is null', { data: [{ index: 0, embedding: [1] }, null] }],
    ['no embedding', { data: [{ index: 0, embedding: [1] }, { index: 1 }] }],
    [
      'an empty embedding',
      {
        data: [
          { index: 0, embedding: [1] },
          { index: 1, embedding: [] },
        ],
      },
    ],
    [
      'a number as a string',
      {
        data: [
          { index: 0, embedding: [1] },
          { index: 1, embedding: [0.5, '0.5'] },
        ],
      },
    ],
    [
      'a null in an embedding',
      {
        data: [
          { index: 0, embedding: [1] },
          { index: 1, embedding: [null] },
        ],
      },
    ],
    ['a number too large for a float', '{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[1e400]}]}'],
  ])('refuses an answer with %s, at once', async (_case, body) => {
    answers = [json(200, body)];
    const error = await failure(embedder().embed(['one', 'two']));
    expect(error).toBeInstanceOf(EmbeddingsRequestError);
    expect(error).toMatchObject({ status: 200, message: `Embeddings endpoint ${where()} answered with a body that is not 2 embeddings` });
    expect(requests).toHaveLength(1);
  });

  it.each([
    ['the API message', json(400, { error: { message: 'Invalid input' } }), 'Invalid input'],
    ['an empty API message as the body', json(400, { error: { message: '' } }), '{"error":{"message":""}}'],
    ['a message that is not text as the body', json(400, { error: { message: 42 } }), '{"error":{"message":42}}'],
    ['a body of another shape as it is', json(400, { detail: 'no' }), '{"detail":"no"}'],
    ['a proxy page, trimmed, its first 200 characters', json(400, `\n  <html>${'x'.repeat(300)}</html>`), `<html>${'x'.repeat(194)}`],
    ['the status text when there is no body', (response: ServerResponse) => response.writeHead(400).end(), 'Bad Request'],
    ['"no message" when there is no status text either', (response: ServerResponse) => response.writeHead(400, '').end(), 'no message'],
    ['the key, redacted', json(400, { error: { message: `Key ${API_KEY} is not allowed` } }), 'Key [redacted] is not allowed'],
    ['a masked key, redacted', json(400, { error: { message: 'Key sk-a****bcd, is not allowed' } }), 'Key [redacted] is not allowed'],
    ['stars that are not a key, as they are', json(400, { error: { message: 'Rated *** of 5' } }), 'Rated *** of 5'],
  ])('quotes in a refusal %s', async (_case, answer, quoted) => {
    answers = [answer];
    const error = await failure(embedder().embed(['one']));
    expect(error).toMatchObject({
      name: 'EmbeddingsRequestError',
      status: 400,
      message: `Embeddings endpoint ${where()} refused the request with 400: ${quoted}`,
    });
  });

  it('quotes the status text of an answer whose body breaks off', async () => {
    answers = [(response) => response.writeHead(503, { 'content-length': '100' }).write('{"err', () => response.socket?.destroy())];
    const error = await failure(embedder({ maxAttempts: 1 }).embed(['one']));
    expect(error).toMatchObject({
      name: 'EmbeddingsUnavailableError',
      message: `Gave up after attempt 1: embeddings endpoint ${where()} answered 503: Service Unavailable`,
    });
  });

  it('names the endpoint without its query, which may hold a key', async () => {
    answers = [json(400, { error: { message: 'no' } })];
    const error = await failure(
      embedder({}, { endpoint: `${server.url}/openai/deployments/small/embeddings?api-version=2024-10-21&sig=secret` }).embed(['one']),
    );
    expect(error.message).toBe(`Embeddings endpoint ${server.url}/openai/deployments/small/embeddings refused the request with 400: no`);
  });

  it.each([300, 307])('follows no redirect (%i), so that the key goes nowhere else', async (status) => {
    const elsewhere = await startSmallServer((_request, response) => json(200, { data: [{ index: 0, embedding: [1] }] })(response));
    try {
      answers = [(response) => response.writeHead(status, { location: `${elsewhere.url}/v1/embeddings` }).end()];
      const error = await failure(embedder().embed(['one']));
      expect(error).toMatchObject({
        name: 'EmbeddingsRequestError',
        status,
        message: `Embeddings endpoint ${where()} redirects (${status}), which is not followed: set the URL it redirects to`,
      });
      expect(requests).toHaveLength(1);
      expect(elsewhere.hits).toEqual([]);
    } finally {
      await elsewhere.close();
    }
  });

  it('names a connection that failed by its socket error', async () => {
    const closed = await startSmallServer(() => undefined);
    await closed.close();
    const error = await failure(embedder({ maxAttempts: 2 }, { endpoint: `${closed.url}/v1` }).embed(['one']));
    expect(error).toMatchObject({
      name: 'EmbeddingsUnavailableError',
      message: `Gave up after attempt 2: embeddings endpoint ${closed.url}/v1/embeddings could not be reached (ECONNREFUSED)`,
    });
  });

  it.each([
    ['Retry-After in seconds, padded', { 'retry-after': ' 2 ' }, 2_000],
    ['Retry-After in fractional seconds', { 'retry-after': '1.25' }, 1_250],
    ['Retry-After of many digits', { 'retry-after': '12' }, 12_000],
    ['retry-after-ms, padded', { 'retry-after-ms': ' 250 ', 'retry-after': '3' }, 250],
    ['fractional retry-after-ms', { 'retry-after-ms': '1.25', 'retry-after': '3' }, 1.25],
    ['Retry-After when retry-after-ms is not a number', { 'retry-after-ms': 'x250', 'retry-after': '3' }, 3_000],
    ['Retry-After when retry-after-ms has more after it', { 'retry-after-ms': '250x', 'retry-after': '3' }, 3_000],
    ['Retry-After when retry-after-ms is not a decimal', { 'retry-after-ms': '1.x', 'retry-after': '3' }, 3_000],
  ])('waits as %s says', async (_case, headers, wait) => {
    answers = [json(503, { error: { message: 'busy' } }, headers), embeddings([{ index: 0, embedding: [1] }])];
    await embedder().embed(['one']);
    expect(waits).toEqual([wait]);
  });

  it('waits until a Retry-After date, and not at all for a date gone by', async () => {
    const inAMinute = new Date(Date.now() + 60_000).toUTCString();
    answers = [json(503, {}, { 'retry-after': inAMinute }), json(503, {}, { 'retry-after': new Date(Date.now() - 60_000).toUTCString() })];
    answers.push(embeddings([{ index: 0, embedding: [1] }]));
    await embedder({ maxRetryDelayMs: 120_000 }).embed(['one']);
    // The date has whole seconds: up to one less than asked, and a moment went by.
    expect(waits[0]).toBeGreaterThan(50_000);
    expect(waits[0]).toBeLessThanOrEqual(60_000);
    expect(waits[1]).toBe(0);
  });

  it.each([['soon'], ['x5'], ['5x']])('backs off on its own when Retry-After is %j', async (retryAfter) => {
    answers = [json(503, {}, { 'retry-after': retryAfter }), embeddings([{ index: 0, embedding: [1] }])];
    await embedder().embed(['one']);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThanOrEqual(375);
    expect(waits[0]).toBeLessThanOrEqual(625);
  });

  it('really waits between attempts when no one tells it how', async () => {
    answers = [json(503, {}, { 'retry-after-ms': '300' }), embeddings([{ index: 0, embedding: [1] }])];
    await createEmbedder({ endpoint: endpoint() }).embed(['one']);
    expect(requests).toHaveLength(2);
    // Timers fire no earlier than asked; a millisecond of rounding between the clocks.
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(299);
  });

  it('makes one attempt when told to, and refuses a batch size or attempt count that is not a positive integer', async () => {
    answers = [json(503, {})];
    expect(await failure(embedder({ maxAttempts: 1 }).embed(['one']))).toMatchObject({ attempts: 1 });
    expect(requests).toHaveLength(1);
    for (const [options, message] of [
      [{ batchSize: 0 }, 'batchSize must be a positive integer'],
      [{ batchSize: 1.5 }, 'batchSize must be a positive integer'],
      [{ maxAttempts: 0 }, 'maxAttempts must be a positive integer'],
      [{ maxAttempts: 2.5 }, 'maxAttempts must be a positive integer'],
    ] as const) {
      expect(() => embedder(options)).toThrow(new RangeError(message));
    }
  });
});
