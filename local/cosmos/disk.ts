/**
 * Where the embedded Cosmos DB keeps the app's documents between runs (docs/local-stack.md): an LMDB database,
 * one entry per document with its change feed LSN, each write request one transaction synced before its answer.
 */
import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';

/** A document's partition key: one value per level of the container's key (two for a hierarchical one). */
export type PartitionKeyValue = (string | number | boolean | null)[];
export type StoredDocument = { id: string } & Record<string, unknown>;
/** A kept document and its container. */
export interface Kept {
  container: string;
  document: StoredDocument;
}
/** What a write did to one document: the document as it now is, or as it was when deleted. */
export type Effect = Kept & { deleted?: boolean };
/** A container's last change feed LSN, deletes included, which no kept document may carry: new writes number on from it. */
type LastLsn = { container: string; lastLsn: number };

const FILE = 'documents.mdb';

export class DocumentStore {
  readonly #database: RootDatabase<Kept | LastLsn, string>;
  readonly #partitionKeyOf: (container: string, document: StoredDocument) => PartitionKeyValue;
  /** The last write not yet on disk; those before it are, as LMDB commits in order. */
  #unsynced: Promise<void> | undefined;
  #failure: Error | undefined;

  private constructor(folder: string, partitionKeyOf: (container: string, document: StoredDocument) => PartitionKeyValue) {
    // overlappingSync off: a commit resolves once it is synced, not before. eventTurnBatching off: with it, a commit that
    // fails also rejects a promise of lmdb's own that nothing awaits, which ends the process (transactions still share syncs).
    this.#database = open<Kept | LastLsn, string>({ path: join(folder, FILE), encoding: 'json', overlappingSync: false, eventTurnBatching: false });
    this.#partitionKeyOf = partitionKeyOf;
  }

  /** Opens the folder's database; answers it, every document it keeps and each container's last LSN. */
  static async open(folder: string, partitionKeyOf: (container: string, document: StoredDocument) => PartitionKeyValue) {
    await mkdir(folder, { recursive: true });
    const store = new DocumentStore(folder, partitionKeyOf);
    const entries = Array.from(store.#database.getRange(), ({ value }) => value);
    const kept = entries.filter((entry): entry is Kept => 'document' in entry);
    const lastLsns = new Map(entries.flatMap((entry) => ('lastLsn' in entry ? [[entry.container, entry.lastLsn] as const] : [])));
    return { store, kept, lastLsns };
  }

  /** Records one request's effects; resolves once they are on disk. Call in the order the emulator applied the writes. */
  record(effects: Effect[]): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    const unsynced: Promise<void> = this.#database
      .transaction(() => {
        for (const { container, document, deleted } of effects) {
          const key = this.#key(container, document);
          if (deleted) this.#database.removeSync(key);
          else this.#database.putSync(key, { container, document });
          if (typeof document._lsn === 'number') this.#database.putSync(`lsn:${container}`, { container, lastLsn: document._lsn });
        }
      })
      .catch((cause: { commitError?: Promise<never> }) => {
        // Its reason (lmdb has logged it) is in a promise of its own, which would end the process unhandled.
        cause.commitError?.catch(() => undefined);
        // A database that cannot be written can no longer promise anything: every write from now on fails.
        this.#failure ??= new Error('Could not write the local database', { cause });
        console.error(this.#failure);
        throw this.#failure;
      })
      .finally(() => {
        if (this.#unsynced === unsynced) this.#unsynced = undefined;
      });
    this.#unsynced = unsynced;
    return unsynced;
  }

  /** Resolves once every write recorded so far is on disk (undefined: they are); rejects once one failed, as memory holds what the disk does not. */
  settled(): Promise<void> | undefined {
    return this.#failure ? Promise.reject(this.#failure) : this.#unsynced;
  }

  async close(): Promise<void> {
    await this.#unsynced?.catch(() => undefined);
    await this.#database.close();
  }

  /** One key per document. Hashed: LMDB's keys are at most 1,978 bytes, and an id with its partition key may be longer. */
  #key(container: string, document: StoredDocument): string {
    const named = JSON.stringify([container, this.#partitionKeyOf(container, document), document.id]);
    return createHash('sha256').update(named).digest('base64url');
  }
}
