/**
 * The one active RAG job of a tenant: a lock document that exists while a job of the tenant is Queued
 * or Running. Taking it in the batch that stores the job is what makes that job the only active one;
 * the job's end lets it go in the batch that ends the job.
 */
import type { OperationInput } from '@azure/cosmos';
import { cosmosStatus } from './cosmos.js';
import { asJson, readDocument, tenantData, type StoredDocument } from './tenant-data.js';

const LOCK_ID = 'rag-active-job';

interface ActiveJobLock extends StoredDocument {
  id: typeof LOCK_ID;
  type: 'ragActiveJob';
  jobId: string;
}

/** The tenant's lock as read: the job that holds it (a job that ended may have left it behind), and the lock's version. */
export interface HeldLock {
  jobId: string;
  etag: string;
}

/** The tenant's lock, if a job holds it. */
export async function heldLock(tenantId: string): Promise<HeldLock | undefined> {
  const lock = await readDocument<ActiveJobLock>(tenantId, LOCK_ID, 'ragActiveJob');
  return lock && { jobId: lock.jobId, etag: lock._etag };
}

/** The job that holds the tenant's lock, if one does. */
export async function lockHolder(tenantId: string): Promise<string | undefined> {
  return (await heldLock(tenantId))?.jobId;
}

/** The batch operation that takes the lock for a job: a 409 while another holds it. */
export function takeLock(tenantId: string, jobId: string): OperationInput {
  const lock: Omit<ActiveJobLock, '_etag'> = { id: LOCK_ID, tenantId, type: 'ragActiveJob', jobId };
  return { operationType: 'Create', resourceBody: asJson(lock) };
}

/** The batch operation that lets the lock go. */
export const releaseLock = (tenantId: string): OperationInput => ({ operationType: 'Delete', id: LOCK_ID, partitionKey: tenantId });

/**
 * Lets go a lock left behind by a job that ended (a crash between the two writes): that lock as it was
 * read, never one taken since by the next job (the lock's version guards the delete). Gone or taken
 * since: nothing to do, and the caller looks again.
 */
export async function releaseStaleLock(tenantId: string, stale: HeldLock): Promise<void> {
  await (
    await tenantData()
  )
    .item(LOCK_ID, tenantId)
    .delete({ accessCondition: { type: 'IfMatch', condition: stale.etag } })
    .catch((error: unknown) => {
      const status = cosmosStatus(error);
      if (status !== 404 && status !== 412) throw error;
    });
}
