import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { standInEmbedding, startEmbeddingsStandIn, type EmbeddingsStandIn } from '../support/embeddings-stand-in.js';
import { ConfigurationError } from '../../shared/errors.js';
import {
  createEmbedder,
  EmbeddingsRequestError,
  EmbeddingsThrottledError,
  EmbeddingsUnavailableError,
  readEmbeddingsSettings,
  type EmbedderOptions,
  type EmbeddingsSettings,
} from '../../shared/rag/embeddings.js';

const API_KEY = 'sk-local-test-key-0123456789';
const MODEL = 'text-embedding-3-small';
const AZURE_ENDPOINT = 'https://contoso.openai.azure.com/openai/deployments/embeddings-small/embeddings?api-version=2024-10-21';

const texts = (count: number) => Array.from({ length: count }, (_, index) => `Chunk ${index + 1}: 会議の議事録 and notes`);

describe('embeddings settings', () => {
  it('are absent when no endpoint is set: embeddings are optional', () => {
    expect(readEmbeddingsSettings({})).toBeUndefined();
    expect(readEmbeddingsSettings({ EMBEDDINGS_ENDPOINT: '  ', EMBEDDINGS_API_KEY: 'k' })).toBeUndefined();
  });

  it('take the endpoint, key and model as given', () => {
    expect(readEmbeddingsSettings({ EMBEDDINGS_ENDPOINT: 'https://api.openai.com/v1', EMBEDDINGS_API_KEY: ' k ', EMBEDDINGS_MODEL: MODEL })).toEqual({
      endpoint: 'https://api.openai.com/v1',
      apiKey: 'k',
      model: MODEL,
    });
    expect(readEmbeddingsSettings({ EMBEDDINGS_ENDPOINT: AZURE_ENDPOINT })).toEqual({ endpoint: AZURE_ENDPOINT, apiKey: undefined, model: undefined });
  });

  it.each([
    ['not-a-url', 'EMBEDDINGS_ENDPOINT is not a URL'],
    ['http://embeddings.example/v1', 'EMBEDDINGS_ENDPOINT must be an https URL (plain http only on localhost)'],
    ['https://contoso.openai.azure.com/openai/deployments/small/embeddings', expect.stringContaining('no api-version query')],
  ])('refuse the endpoint %s', (endpoint, problem) => {
    try {
      readEmbeddingsSettings({ EMBEDDINGS_ENDPOINT: endpoint });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).problems).toEqual([problem]);
    }
  });
});

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
    ['https://api.openai.com/v1/', 'bearer', '/v1/embeddings', ''],
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
    expect(failure).toMatchObject({ retryAfterMs: 3_000, done: [standInEmbedding('first')] });
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
    expect(failure).toMatchObject({ attempts: 6, message: expect.stringContaining('answered 503: ') });
    expect((failure as Error).cause).toBeInstanceOf(EmbeddingsRequestError);
    expect(standIn.counts.requests).toBe(6);
    expect(waits).toEqual([1_000, 1_000, 1_000, 1_000, 1_000]);
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
    expect((failure as Error).message).toContain('could not be reached (timed out), after 2 attempts');
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
    expect(failure).toMatchObject({ status: 401, message: expect.stringContaining('refused the request with 401: Incorrect API key provided: [redacted]') });
    // The stand-in echoes the key masked as OpenAI does, both ends showing.
    for (const part of [wrongKey, wrongKey.slice(-4)]) expect(`${(failure as Error).message}\n${(failure as Error).stack}`).not.toContain(part);
    expect(standIn.counts.requests).toBe(1);
  });
});
