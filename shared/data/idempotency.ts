import { createHash } from 'node:crypto';
import type { Container, JSONObject, OperationInput } from '@azure/cosmos';
import { RuleError } from '../domain/errors.js';
import { cosmosStatus } from './cosmos.js';

const RETENTION_SECONDS = 24 * 60 * 60;

/** An Idempotency-Key as a create receives it: the key, and the operation it belongs to. */
export interface Idempotency {
  key: string;
  scope: string;
}

interface IdempotencyDocument<T> {
  id: string;
  tenantId: string;
  type: 'idempotency';
  requestHash: string;
  snapshot: T;
  createdAt: string;
  ttl: number;
  _etag: string;
}

/** Where a create's record lives (per caller, operation and key) and what its request looked like. */
export interface IdempotentRequest {
  recordId: string;
  requestHash: string;
}

function sha256(...parts: string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\n');
  return hash.digest('base64url');
}

/** The record of a create made by `callerId` under an Idempotency-Key, for the request it was made with. */
export function idempotentRequest({ key, scope }: Idempotency, callerId: string, request: unknown): IdempotentRequest {
  return { recordId: `idempotency-${sha256(callerId, scope, key)}`, requestHash: sha256(JSON.stringify(request)) };
}

/**
 * The first result of an earlier request with the same key, if one was recorded in the last 24 hours.
 * The same key with a different request is refused, as the IETF Idempotency-Key draft advises.
 */
export async function recordedResult<T>(container: Container, tenantId: string, idempotent: IdempotentRequest): Promise<T | undefined> {
  const { resource } = await container.item(idempotent.recordId, tenantId).read<IdempotencyDocument<T>>();
  if (!resource) return undefined;
  if (Date.parse(resource.createdAt) + RETENTION_SECONDS * 1000 < Date.now()) {
    // Cosmos's TTL counts from the commit's `_ts`, up to a few seconds after `createdAt`: the 24 hours are `createdAt`'s.
    // Removed as read: a racing request with the key may have replaced it with its own record, whose answer it is now.
    const replaced = await container
      .item(idempotent.recordId, tenantId)
      .delete({ accessCondition: { type: 'IfMatch', condition: resource._etag } })
      .then(
        () => false,
        (error: unknown) => {
          const status = cosmosStatus(error);
          if (status !== 404 && status !== 412) throw error;
          return status === 412;
        },
      );
    return replaced ? recordedResult(container, tenantId, idempotent) : undefined;
  }
  if (resource.requestHash !== idempotent.requestHash) throw new RuleError('keyReused', 'idempotencyKeyReused');
  return resource.snapshot;
}

/** The batch operation that records a result; it goes first so that a racing duplicate fails before creating anything. */
export function recordResultOperation<T>(tenantId: string, idempotent: IdempotentRequest, snapshot: T): OperationInput {
  const record: Omit<IdempotencyDocument<T>, '_etag'> = {
    id: idempotent.recordId,
    tenantId,
    type: 'idempotency',
    requestHash: idempotent.requestHash,
    snapshot,
    createdAt: new Date().toISOString(),
    ttl: RETENTION_SECONDS,
  };
  return { operationType: 'Create', resourceBody: record as unknown as JSONObject };
}
