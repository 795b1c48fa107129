/**
 * Where the embedded Cosmos DB keeps its documents between runs (docs/local-stack.md), in one folder:
 * `data.json`, the snapshot `{"journal": N, "containers": {"<container>": [document, …]}}` (without
 * "journal", the older format: N = 0), and journal-N.log, journal-(N+1).log, …: one line per answered
 * write request, `<CRC-32 of the JSON, 8 hex digits> <JSON array of its effects>`, synced before the answer.
 */
import { mkdir, open, readdir, readFile, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';

/** A document's partition key: one value per level of the container's key (two for a hierarchical one). */
export type PartitionKeyValue = (string | number | boolean | null)[];
export type StoredDocument = { id: string } & Record<string, unknown>;
/** What a write did to one document: the document as it now is, or its deletion. */
export type Effect = { container: string; put: StoredDocument } | { container: string; delete: { partitionKey: PartitionKeyValue; id: string } };
/** Every document, by container: what a snapshot holds. */
export type Documents = Record<string, StoredDocument[]>;

export interface DocumentStoreOptions {
  folder: string;
  /** The documents as they now are, for a snapshot: called when one is taken. */
  documents: () => Documents;
  /** The journal size that starts a compaction; by default the snapshot's size, and at least 8 MiB. */
  compactAfterBytes?: number;
}

/** The lines gathered for one write and sync, and the promise their requests wait on. */
interface Group {
  text: string;
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
  return { text: '', done, resolve, reject };
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

async function journalGenerations(folder: string): Promise<number[]> {
  const generations = (await readdir(folder)).map((name) => JOURNAL.exec(name)?.[1]).filter((found) => found !== undefined);
  return generations.map(Number).sort((a, b) => a - b);
}

async function removeJournalsBefore(folder: string, generation: number): Promise<void> {
  for (const older of await journalGenerations(folder)) if (older < generation) await rm(journalFile(folder, older), { force: true });
}

async function readSnapshot(folder: string): Promise<{ journal: number; containers: Documents; bytes: number }> {
  const file = join(folder, SNAPSHOT);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { journal: 0, containers: {}, bytes: 0 };
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as { journal?: number; containers?: Documents } & Documents;
    const bytes = Buffer.byteLength(text);
    return typeof parsed.journal === 'number' ? { journal: parsed.journal, containers: parsed.containers!, bytes } : { journal: 0, containers: parsed, bytes };
  } catch (error) {
    throw new Error(`Cannot read the local database snapshot ${file}; move it away to start empty`, { cause: error });
  }
}

/** Written beside the snapshot and renamed over it, so that a crash leaves the old one or the new one, whole. */
async function writeSnapshot(folder: string, journal: number, containers: Documents): Promise<number> {
  const text = JSON.stringify({ journal, containers });
  const temporary = join(folder, `${SNAPSHOT}.tmp`);
  await writeFile(temporary, text, { flush: true });
  await rename(temporary, join(folder, SNAPSHOT));
  await syncFolder(folder);
  return Buffer.byteLength(text);
}

/** One journal line's effects, or undefined when the line is cut short or damaged. */
function decodeLine(line: string): Effect[] | undefined {
  const json = line.slice(9);
  return line[8] === ' ' && line.slice(0, 8) === checksum(json) ? (JSON.parse(json) as Effect[]) : undefined;
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
  /** Write requests recorded, and the syncs that made them durable: group commit shares one among many. */
  readonly stats = { writes: 0, syncs: 0 };
  readonly #options: DocumentStoreOptions;
  #snapshotBytes = 0;
  #generation = 0;
  #journal!: FileHandle;
  #journalBytes = 0;
  /** Lines waiting for the next write, and the write under way. */
  #gathering: Group | undefined;
  #writing: Group | undefined;
  #draining: Promise<void> | undefined;
  #compaction: Promise<void> | undefined;
  #failure: Error | undefined;
  #closed = false;

  private constructor(options: DocumentStoreOptions) {
    this.#options = options;
  }

  /**
   * Reads the snapshot and the journals after it, and opens a new journal for the writes to come. The
   * kept writes, in order: the snapshot's documents, then the journals' effects. A damaged journal throws.
   */
  static async open(options: DocumentStoreOptions): Promise<{ store: DocumentStore; kept: Effect[] }> {
    const store = new DocumentStore(options);
    const { folder } = options;
    await mkdir(folder, { recursive: true });
    const snapshot = await readSnapshot(folder);
    store.#snapshotBytes = snapshot.bytes;
    const kept: Effect[] = Object.entries(snapshot.containers).flatMap(([container, documents]) => documents.map((put) => ({ container, put })));
    store.#generation = snapshot.journal;
    let cutShort = false;
    for (const generation of (await journalGenerations(folder)).filter((found) => found >= snapshot.journal)) {
      const file = journalFile(folder, generation);
      const text = await readFile(file, 'utf8');
      const journal = decodeJournal(text, file);
      for (const effects of journal.writes) kept.push(...effects);
      cutShort = journal.cutShort;
      if (cutShort) console.warn(`The local database ignored the last line of ${file}: a write cut short by a crash, never answered.`);
      // The replayed journals count towards the next compaction, which folds them into a snapshot.
      store.#journalBytes += Buffer.byteLength(text);
      store.#generation = generation;
    }
    // The writes to come go on in the last journal, or in a new one after a line cut short.
    if (cutShort) store.#generation += 1;
    store.#journal = await open(journalFile(folder, store.#generation), 'a');
    await syncFolder(folder);
    return { store, kept };
  }

  /** Records one request's effects; resolves once they are on disk. Call in the order the emulator applied the writes. */
  record(effects: Effect[]): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closed) return Promise.reject(new Error('The local database is closed'));
    this.stats.writes += 1;
    const json = JSON.stringify(effects);
    const line = `${checksum(json)} ${json}\n`;
    const group = (this.#gathering ??= newGroup());
    group.text += line;
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
    await this.#journal.close();
    if (this.#failure) return;
    this.#generation += 1;
    await writeSnapshot(this.#options.folder, this.#generation, this.#options.documents());
    await removeJournalsBefore(this.#options.folder, this.#generation);
  }

  /** Writes the gathered lines, one group at a time, until none are left. */
  async #drain(): Promise<void> {
    while (this.#gathering && !this.#failure) {
      const group = (this.#writing = this.#gathering);
      this.#gathering = undefined;
      try {
        await this.#journal.appendFile(group.text);
        await this.#journal.datasync();
        this.stats.syncs += 1;
        this.#writing = undefined;
        group.resolve();
        this.#journalBytes += Buffer.byteLength(group.text);
        const threshold = this.#options.compactAfterBytes ?? Math.max(MIN_COMPACTION_BYTES, this.#snapshotBytes);
        if (!this.#compaction && this.#journalBytes >= threshold) await this.#startCompaction();
      } catch (error) {
        this.#fail(error);
      }
    }
    this.#draining = undefined;
  }

  /**
   * Between two group writes: later lines go to a new journal, and the documents as they are now
   * become the snapshot it starts from, written while the writes go on. Every effect is a whole
   * document or a delete, so replaying a line the snapshot already holds changes nothing.
   */
  async #startCompaction(): Promise<void> {
    const { folder } = this.#options;
    const documents = this.#options.documents();
    const generation = this.#generation + 1;
    const previous = this.#journal;
    this.#journal = await open(journalFile(folder, generation), 'a');
    await syncFolder(folder);
    this.#generation = generation;
    this.#journalBytes = 0;
    this.#compaction = (async () => {
      await previous.close();
      this.#snapshotBytes = await writeSnapshot(folder, generation, documents);
      await removeJournalsBefore(folder, generation);
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
