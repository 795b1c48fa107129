/**
 * Where the embedded Cosmos DB keeps its documents between runs: a snapshot and an append-only
 * journal, in one folder. The emulator records the effect of each write it answers and holds the
 * answer until the effect is on disk, so a crash (kill -9, power loss) loses no acknowledged write.
 *
 * The files:
 *
 *   data.json      The snapshot: {"journal": N, "containers": {"<container id>": [document, ...]}},
 *                  every document as it was when journal N began, without the system properties.
 *                  A file without "journal" is the older snapshot-only format, read as N = 0.
 *   journal-N.log  One line per answered write request, in the order they were answered:
 *                    <CRC-32 of the JSON, 8 hex digits> <JSON>\n
 *                  The JSON is the array of the request's effects (several for a batch), each either
 *                    {"container": "<id>", "put": {document as it now is}}         create, upsert, replace, patch
 *                    {"container": "<id>", "delete": {"partitionKey": <value>, "id": "<id>"}}
 *                  A line is written and fsynced before its request is answered; requests that arrive
 *                  while one write is under way share the next write and fsync (group commit).
 *
 * Start: the snapshot, then journal-N.log, journal-(N+1).log, … replayed in order. A last line that is
 * cut short or fails its checksum is a write a crash interrupted, so never answered: it is ignored.
 * A bad line with good ones after it is damage, not a crash: the start fails and says so.
 *
 * Compaction, once the journal outgrows the snapshot (and at least 8 MiB), after a start that replayed
 * a journal, and on a clean shutdown: between two group writes, later lines go to journal-(N+1).log;
 * the documents as they are at that moment go to data.json.tmp, which is fsynced and renamed over
 * data.json ("journal": N+1), the folder fsynced; then the older journals are deleted. Writes go on
 * meanwhile. Every effect is a whole document or a delete, so replaying a line whose effect the
 * snapshot already holds changes nothing: a crash at any step leaves files that replay to the same
 * documents.
 */
import { mkdir, open, readdir, readFile, rename, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';

/** A document's partition key: one value per level of the container's key (two for a hierarchical one). */
export type PartitionKeyValue = (string | number | boolean | null)[];
export type StoredDocument = { id: string } & Record<string, unknown>;
export type Effect = { container: string; put: StoredDocument } | { container: string; delete: { partitionKey: PartitionKeyValue; id: string } };

export interface DocumentStoreOptions {
  folder: string;
  /** Each container's partition key path, such as `/tenantId`: where a document's key value is. */
  partitionKeyPaths: Record<string, readonly string[]>;
  /** The journal size that starts a compaction; by default the snapshot's size, and at least 8 MiB. */
  compactAfterBytes?: number;
}

interface Snapshot {
  journal: number;
  containers: Record<string, StoredDocument[]>;
}

/** The lines gathered for one write and fsync, and the promise their requests wait on. */
interface Group {
  text: string;
  bytes: number;
  done: Promise<void>;
  resolve(): void;
  reject(error: Error): void;
}

const SNAPSHOT = 'data.json';
const JOURNAL = /^journal-(\d+)\.log$/;
const MIN_COMPACTION_BYTES = 8 * 1024 * 1024;

const journalFile = (folder: string, generation: number) => join(folder, `journal-${generation}.log`);
const checksum = (json: string) => crc32(json).toString(16).padStart(8, '0');

function newGroup(): Group {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const done = new Promise<void>((onResolve, onReject) => ((resolve = onResolve), (reject = onReject)));
  // Each request that waits on the group handles its failure; this keeps a failure nobody waits on quiet.
  done.catch(() => undefined);
  return { text: '', bytes: 0, done, resolve, reject };
}

/** Makes a rename, a new file or a deletion in the folder durable. Windows can neither open a folder nor needs to. */
async function syncFolder(folder: string): Promise<void> {
  if (process.platform === 'win32') return;
  const handle = await open(folder, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function openJournal(folder: string, generation: number): Promise<FileHandle> {
  const handle = await open(journalFile(folder, generation), 'a');
  await syncFolder(folder);
  return handle;
}

async function journalGenerations(folder: string): Promise<number[]> {
  const generations = (await readdir(folder)).map((name) => JOURNAL.exec(name)?.[1]).filter((found) => found !== undefined);
  return generations.map(Number).sort((a, b) => a - b);
}

async function removeJournalsBefore(folder: string, generation: number): Promise<void> {
  for (const older of await journalGenerations(folder)) if (older < generation) await rm(journalFile(folder, older), { force: true });
}

async function readSnapshot(folder: string): Promise<{ snapshot: Snapshot; bytes: number }> {
  const file = join(folder, SNAPSHOT);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { snapshot: { journal: 0, containers: {} }, bytes: 0 };
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as Partial<Snapshot> | Record<string, StoredDocument[]>;
    const snapshot = typeof parsed.journal === 'number' ? (parsed as Snapshot) : { journal: 0, containers: parsed as Record<string, StoredDocument[]> };
    return { snapshot, bytes: Buffer.byteLength(text) };
  } catch (error) {
    throw new Error(`Cannot read the local database snapshot ${file}; move it away to start empty`, { cause: error });
  }
}

/** Written beside the snapshot and renamed over it, so that a crash leaves the old one or the new one, whole. */
async function writeSnapshot(folder: string, snapshot: Snapshot): Promise<number> {
  const text = JSON.stringify(snapshot);
  const temporary = join(folder, `${SNAPSHOT}.tmp`);
  const handle = await open(temporary, 'w');
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, join(folder, SNAPSHOT));
  await syncFolder(folder);
  return Buffer.byteLength(text);
}

function isEffect(value: unknown): value is Effect {
  if (typeof value !== 'object' || value === null || typeof (value as { container?: unknown }).container !== 'string') return false;
  const { put, delete: deleted } = value as { put?: { id?: unknown }; delete?: { id?: unknown } };
  return typeof put?.id === 'string' || typeof deleted?.id === 'string';
}

/** One journal line's effects, or undefined when the line is cut short or damaged. */
function decodeLine(line: string): Effect[] | undefined {
  const json = line.slice(9);
  if (line[8] !== ' ' || line.slice(0, 8) !== checksum(json)) return undefined;
  try {
    const effects: unknown = JSON.parse(json);
    return Array.isArray(effects) && effects.every(isEffect) ? effects : undefined;
  } catch {
    return undefined;
  }
}

/** The writes of one journal file, without a last line that a crash cut short. */
function decodeJournal(text: string, file: string): { writes: Effect[][]; cutShort: boolean } {
  const lines = text.split('\n');
  // What follows the last newline: nothing, unless a crash interrupted the last write.
  const unfinished = lines.pop();
  const writes: Effect[][] = [];
  for (const [index, line] of lines.entries()) {
    const effects = decodeLine(line);
    if (effects) {
      writes.push(effects);
      continue;
    }
    if (lines.slice(index + 1).some((later) => decodeLine(later))) {
      throw new Error(`The local database journal ${file} is damaged at line ${index + 1}; move the folder away to start empty`);
    }
    return { writes, cutShort: true };
  }
  return { writes, cutShort: unfinished !== '' };
}

export class DocumentStore {
  /** Write requests recorded, and the fsyncs that made them durable: group commit shares one among many. */
  readonly stats = { writes: 0, syncs: 0 };
  readonly #folder: string;
  readonly #partitionKeyPaths: Record<string, string[][]>;
  readonly #compactAfterBytes: number | undefined;
  /** Every document, by container, partition key value and id: what the next snapshot holds. */
  readonly #documents = new Map<string, { container: string; document: StoredDocument }>();
  #snapshotBytes = 0;
  #generation = 0;
  #journal: FileHandle | undefined;
  #journalBytes = 0;
  /** Lines waiting for the next write, and the write under way. */
  #gathering: Group | undefined;
  #writing: Group | undefined;
  #draining: Promise<void> | undefined;
  #compaction: Promise<void> | undefined;
  #failure: Error | undefined;
  #closed = false;

  private constructor(options: DocumentStoreOptions) {
    this.#folder = options.folder;
    this.#partitionKeyPaths = Object.fromEntries(
      Object.entries(options.partitionKeyPaths).map(([container, paths]) => [container, paths.map((path) => path.slice(1).split('/'))]),
    );
    this.#compactAfterBytes = options.compactAfterBytes;
  }

  /** Reads the snapshot, replays the journals, and opens a journal for the writes to come. */
  static async open(options: DocumentStoreOptions): Promise<DocumentStore> {
    const store = new DocumentStore(options);
    const folder = options.folder;
    await mkdir(folder, { recursive: true });
    const { snapshot, bytes } = await readSnapshot(folder);
    store.#snapshotBytes = bytes;
    for (const [container, documents] of Object.entries(snapshot.containers)) for (const document of documents) store.#apply({ container, put: document });

    const journals = (await journalGenerations(folder)).filter((generation) => generation >= snapshot.journal);
    for (const generation of journals) {
      const file = journalFile(folder, generation);
      const { writes, cutShort } = decodeJournal(await readFile(file, 'utf8'), file);
      for (const effects of writes) for (const effect of effects) store.#apply(effect);
      if (cutShort) console.warn(`The local database ignored the last line of ${file}: a write cut short by a crash, never answered.`);
    }
    store.#generation = journals.length > 0 ? journals.at(-1)! + 1 : snapshot.journal;
    if (journals.length > 0) store.#snapshotBytes = await writeSnapshot(folder, store.#snapshot());
    await removeJournalsBefore(folder, store.#generation);
    store.#journal = await openJournal(folder, store.#generation);
    return store;
  }

  /** Every document, for loading them into the emulator at start. */
  documents(): { container: string; document: StoredDocument }[] {
    return [...this.#documents.values()];
  }

  /** Records one request's effects; resolves once they are on disk. Call in the order the emulator applied the writes. */
  record(effects: Effect[]): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closed) return Promise.reject(new Error('The local database is closed'));
    for (const effect of effects) this.#apply(effect);
    this.stats.writes += 1;
    const json = JSON.stringify(effects);
    const line = `${checksum(json)} ${json}\n`;
    const group = (this.#gathering ??= newGroup());
    group.text += line;
    group.bytes += Buffer.byteLength(line);
    this.#draining ??= this.#drain();
    return group.done;
  }

  /** Resolves once every write recorded so far is on disk; undefined when they all are already. */
  settled(): Promise<void> | undefined {
    return (this.#gathering ?? this.#writing)?.done;
  }

  /** Waits for the writes under way, then writes a snapshot of everything, which leaves no journal to replay. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#draining;
    await this.#compaction;
    await this.#journal?.close();
    if (this.#failure) return;
    this.#generation += 1;
    this.#snapshotBytes = await writeSnapshot(this.#folder, this.#snapshot());
    await removeJournalsBefore(this.#folder, this.#generation);
  }

  #key(container: string, partitionKey: PartitionKeyValue, id: string): string {
    return JSON.stringify([container, partitionKey, id]);
  }

  /** The document's partition key, the way the emulator reads it from the container's key paths. */
  #partitionKeyOf(container: string, document: StoredDocument): PartitionKeyValue {
    return (this.#partitionKeyPaths[container] ?? []).map((path) => {
      let value: unknown = document;
      for (const name of path) value = (value as Record<string, unknown> | undefined)?.[name];
      return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : null;
    });
  }

  #apply(effect: Effect): void {
    if ('put' in effect) {
      const key = this.#key(effect.container, this.#partitionKeyOf(effect.container, effect.put), effect.put.id);
      this.#documents.set(key, { container: effect.container, document: effect.put });
    } else {
      this.#documents.delete(this.#key(effect.container, effect.delete.partitionKey, effect.delete.id));
    }
  }

  #snapshot(): Snapshot {
    const containers: Snapshot['containers'] = {};
    for (const { container, document } of this.#documents.values()) (containers[container] ??= []).push(document);
    return { journal: this.#generation, containers };
  }

  /** Writes the gathered lines, one group at a time, until none are left. */
  async #drain(): Promise<void> {
    while (this.#gathering && !this.#failure) {
      const group = (this.#writing = this.#gathering);
      this.#gathering = undefined;
      try {
        await this.#journal!.appendFile(group.text);
        await this.#journal!.datasync();
        this.stats.syncs += 1;
        this.#writing = undefined;
        group.resolve();
        this.#journalBytes += group.bytes;
        if (!this.#compaction && this.#journalBytes >= (this.#compactAfterBytes ?? Math.max(MIN_COMPACTION_BYTES, this.#snapshotBytes))) {
          await this.#startCompaction();
        }
      } catch (error) {
        this.#fail(error);
      }
    }
    this.#draining = undefined;
  }

  /**
   * Between two group writes: later lines go to a new journal, and the documents as they are now
   * become the snapshot it starts from, written while the writes go on.
   */
  async #startCompaction(): Promise<void> {
    const snapshot = this.#snapshot();
    snapshot.journal += 1;
    const previous = this.#journal!;
    this.#journal = await openJournal(this.#folder, snapshot.journal);
    this.#generation = snapshot.journal;
    this.#journalBytes = 0;
    this.#compaction = (async () => {
      await previous.close();
      this.#snapshotBytes = await writeSnapshot(this.#folder, snapshot);
      await removeJournalsBefore(this.#folder, snapshot.journal);
    })()
      // The journals that the snapshot would have replaced stay, and still replay: nothing is lost.
      .catch((error: unknown) => console.error('Could not compact the local database journal:', error))
      .finally(() => (this.#compaction = undefined));
  }

  /** A journal that cannot be written can no longer promise anything: every write from now on fails. */
  #fail(cause: unknown): void {
    this.#failure = new Error('Could not write the local database journal', { cause });
    console.error(this.#failure, cause);
    for (const group of [this.#writing, this.#gathering]) group?.reject(this.#failure);
    this.#writing = this.#gathering = undefined;
  }
}
