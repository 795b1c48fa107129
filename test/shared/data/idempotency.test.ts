/**
 * Idempotency-Key records: where a create's record lives, what it remembers, and how an earlier
 * result is found, against a container stand-in that keeps documents as Cosmos reads and deletes
 * them (the stand-in is the database, not the module under test).
 */
import { createHash } from 'node:crypto';
import type { Container } from '@azure/cosmos';
import { describe, expect, it } from 'vitest';
import { idempotentRequest, recordedResult, recordResultOperation } from '../../../shared/data/idempotency.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const sha256 = (...parts: string[]) =>
  createHash('sha256')
    .update(parts.map((part) => `${part}\n`).join(''))
    .digest('base64url');

/** Another request's writes, made just before the stand-in carries out a delete. */
type Meanwhile = (documents: Record<string, unknown>) => void;

function store(documents: Record<string, unknown>, deleteFails?: Error, meanwhile?: Meanwhile) {
  const calls: string[] = [];
  const container = {
    item: (id: string, partitionKey: string) => ({
      async read() {
        calls.push(`read ${id} ${partitionKey}`);
        return { resource: documents[`${partitionKey}/${id}`] };
      },
      async delete(options?: { accessCondition?: { type: string; condition: string } }) {
        calls.push(`delete ${id} ${partitionKey}`);
        if (deleteFails) throw deleteFails;
        meanwhile?.(documents);
        const current = documents[`${partitionKey}/${id}`] as { _etag?: string } | undefined;
        if (!current) throw Object.assign(new Error('gone'), { code: 404 });
        // As Cosmos does: a delete under If-Match removes only the version it names.
        if (options?.accessCondition?.type === 'IfMatch' && options.accessCondition.condition !== current._etag) {
          throw Object.assign(new Error('changed'), { code: 412 });
        }
        delete documents[`${partitionKey}/${id}`];
        return {};
      },
    }),
  };
  return { container: container as unknown as Container, calls, documents };
}

describe('an idempotent request', () => {
  it("lives at a record per caller, operation and key, and is told apart by its request's hash", () => {
    const request = { name: 'Website', members: ['a@x.test'] };
    expect(idempotentRequest({ key: 'key-1', scope: 'projects-create' }, 'caller-1', request)).toEqual({
      recordId: `idempotency-${sha256('caller-1', 'projects-create', 'key-1')}`,
      requestHash: sha256(JSON.stringify(request)),
    });
  });
});

describe('a recorded result', () => {
  const idempotent = { recordId: 'idempotency-abc', requestHash: 'hash-1' };
  const record = (createdAt: Date, requestHash = 'hash-1') => ({
    id: 'idempotency-abc',
    tenantId: 't1',
    type: 'idempotency',
    requestHash,
    snapshot: { id: 'PRJ-1' },
    createdAt: createdAt.toISOString(),
    ttl: 86_400,
  });

  it('is none when nothing was recorded', async () => {
    const { container, calls } = store({});
    expect(await recordedResult(container, 't1', idempotent)).toBeUndefined();
    expect(calls).toEqual(['read idempotency-abc t1']);
  });

  it('is the first answer, for the same request within 24 hours', async () => {
    const { container, calls } = store({ 't1/idempotency-abc': record(new Date(Date.now() - DAY_MS + 60_000)) });
    expect(await recordedResult(container, 't1', idempotent)).toEqual({ id: 'PRJ-1' });
    expect(calls).toEqual(['read idempotency-abc t1']);
  });

  it('refuses the same key with another request (422)', async () => {
    const { container } = store({ 't1/idempotency-abc': record(new Date(), 'hash-2') });
    await expect(recordedResult(container, 't1', idempotent)).rejects.toEqual(
      expect.objectContaining({ refusal: 'keyReused', messageKey: 'idempotencyKeyReused' }),
    );
  });

  it('is forgotten 24 hours after its createdAt, though Cosmos (whose TTL counts from the later _ts) still shows it, even for another request', async () => {
    for (const requestHash of ['hash-1', 'hash-2']) {
      const { container, calls, documents } = store({ 't1/idempotency-abc': record(new Date(Date.now() - DAY_MS - 60_000), requestHash) });
      expect(await recordedResult(container, 't1', idempotent)).toBeUndefined();
      expect(calls).toEqual(['read idempotency-abc t1', 'delete idempotency-abc t1']);
      expect(documents).toEqual({});
    }
  });

  it("expired, and replaced meanwhile by a racing request's record, is that record's answer: the new record stays", async () => {
    const fresh = { ...record(new Date()), snapshot: { id: 'PRJ-2' }, _etag: 'second' };
    const { container, calls, documents } = store(
      { 't1/idempotency-abc': { ...record(new Date(Date.now() - DAY_MS - 60_000)), _etag: 'first' } },
      undefined,
      (stored) => {
        stored['t1/idempotency-abc'] = fresh;
      },
    );
    expect(await recordedResult(container, 't1', idempotent)).toEqual({ id: 'PRJ-2' });
    expect(documents).toEqual({ 't1/idempotency-abc': fresh });
    expect(calls).toEqual(['read idempotency-abc t1', 'delete idempotency-abc t1', 'read idempotency-abc t1']);
  });

  it('expired and removed by someone else meanwhile is forgotten too; any other failure of the removal is passed on', async () => {
    const old = record(new Date(Date.now() - DAY_MS - 60_000));
    const gone = Object.assign(new Error('gone'), { code: 404 });
    expect(await recordedResult(store({ 't1/idempotency-abc': old }, gone).container, 't1', idempotent)).toBeUndefined();
    const busy = Object.assign(new Error('busy'), { code: 429 });
    await expect(recordedResult(store({ 't1/idempotency-abc': old }, busy).container, 't1', idempotent)).rejects.toBe(busy);
  });
});

describe('recording a result', () => {
  it('creates the record, kept 24 hours, with the request hash and the answer', () => {
    const before = Date.now();
    const operation = recordResultOperation('t1', { recordId: 'idempotency-abc', requestHash: 'hash-1' }, { id: 'PRJ-1' });
    expect(operation).toEqual({
      operationType: 'Create',
      resourceBody: {
        id: 'idempotency-abc',
        tenantId: 't1',
        type: 'idempotency',
        requestHash: 'hash-1',
        snapshot: { id: 'PRJ-1' },
        createdAt: expect.any(String),
        ttl: 86_400,
      },
    });
    const createdAt = Date.parse((operation as unknown as { resourceBody: { createdAt: string } }).resourceBody.createdAt);
    expect(createdAt).toBeGreaterThanOrEqual(before);
    expect(createdAt).toBeLessThanOrEqual(Date.now());
  });
});
