/**
 * The API's one conditional write and its creates (shared/data/tenant-data.ts), in process, against the
 * embedded Cosmos store of the local stack started by this file. The app reaches the store through a
 * proxy (test/support/cosmos-proxy.ts) that can hold a request while another writer, which goes to
 * the store directly as another instance would, gets there first.
 */
import { randomUUID } from 'node:crypto';
import type { JSONObject, OperationInput } from '@azure/cosmos';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { Principal } from '../../../shared/auth/principal.js';
import { versionOf, type ExpectedVersion } from '../../../shared/domain/versions.js';
import { notFound, RuleError } from '../../../shared/domain/errors.js';
import type { EventDocument, NewEvent } from '../../../shared/data/events.js';
import { idempotentRequest, type Idempotency } from '../../../shared/data/idempotency.js';
import {
  batchFailure,
  changeDocument,
  createDocument,
  fieldsOf,
  oneAtATime,
  readDocument,
  readVisible,
  REMOVE,
  stillExists,
  type DocumentKind,
} from '../../../shared/data/tenant-data.js';
import { beforeRequest, isBatch, writesIn } from '../../support/cosmos-proxy.js';
import { documentsOf, embeddedStoreForTests } from '../../support/embedded-store.js';
import { adminCaller } from '../../support/principals.js';
import { gate } from '../../support/wait.js';

const embedded = embeddedStoreForTests();

/** A kind of document of this test's: a note shows its id, title and count; an archived note is hidden. */
const note = z.object({ id: z.string(), title: z.string(), count: z.number() });
type Note = z.output<typeof note>;
interface NoteDocument extends Note {
  tenantId: string;
  type: 'note';
  /** Bookkeeping the resource does not show. */
  touchedAt?: string;
  /** The stamp of its last change, which alone is no change. */
  updatedAt?: string;
  /** Data the resource does not show. */
  labels?: { name: string; colour?: string }[];
  archived?: true;
  _etag: string;
}
const notes: DocumentKind<NoteDocument, Note> = {
  type: 'note',
  resourceOf: fieldsOf(note),
  missing: (id) => notFound('projectNotFound', { id: id.slice(0, 100) }),
  hidden: { is: (document) => document.archived === true, where: 'IS_DEFINED(c.archived)' },
};

/** The tenant's documents of one type, as another instance reads them. */
const storedOfType = <T>(tenantId: string, type: string) => documentsOf<T>(embedded.direct(), tenantId, type);

async function storedNote(tenantId: string, fields: Partial<NoteDocument> = {}): Promise<NoteDocument> {
  const { resource } = await embedded.direct().items.create({ id: `NOTE-${randomUUID()}`, tenantId, type: 'note', title: 'First', count: 0, ...fields });
  return resource as unknown as NoteDocument;
}

async function stored(tenantId: string, id: string): Promise<NoteDocument | undefined> {
  const { resource } = await embedded.direct().item(id, tenantId).read<NoteDocument>();
  return resource;
}

const eventsOf = (tenantId: string) => storedOfType<EventDocument>(tenantId, 'event');

/** The event a change of a note makes: what it was and what it became (`removed` when it went). */
function noteEvent({ before, after }: { before: NoteDocument; after: NoteDocument | undefined }): NewEvent {
  return { type: 'project.updated', data: { before: notes.resourceOf(before), ...(after ? { after: notes.resourceOf(after) } : { removed: true }) } };
}

/** Another instance replaces the note with these fields between this instance's read and its write. */
function replacedMeanwhile(note: NoteDocument, fields: Partial<NoteDocument>): void {
  beforeRequest(embedded.store, isBatch, async () => {
    await embedded
      .direct()
      .item(note.id, note.tenantId)
      .replace({ ...note, ...fields });
  });
}

/** The change wrote nothing: the note is as it was read, and its tenant has no event. */
async function expectNothingWritten(note: NoteDocument): Promise<void> {
  expect((await stored(note.tenantId, note.id))!._etag).toBe(note._etag);
  expect(await eventsOf(note.tenantId)).toEqual([]);
}

const rename = (title: string) => (current: NoteDocument) => ({ ...current, title });
const versionOfNote = (document: NoteDocument) => versionOf(notes.resourceOf(document));

function change(tenantId: string, id: string, options: Partial<Parameters<typeof changeDocument<NoteDocument, Note>>[0]> = {}) {
  return changeDocument<NoteDocument, Note>({ kind: notes, tenantId, id, expected: undefined, change: rename('Second'), ...options });
}

describe('fieldsOf', () => {
  it("shows exactly the schema's fields, in its order, and nothing of the bookkeeping", () => {
    const resource = notes.resourceOf({ count: 2, tenantId: 't', type: 'note', title: 'T', id: 'N', touchedAt: 'x', _etag: 'e' });
    expect(Object.entries(resource)).toEqual([
      ['id', 'N'],
      ['title', 'T'],
      ['count', 2],
    ]);
  });
});

describe('reading a document', () => {
  it('finds it by id and type, hidden or not; another type under that id, or none, is not found', async () => {
    const tenantId = randomUUID();
    const visible = await storedNote(tenantId);
    const archived = await storedNote(tenantId, { archived: true });
    await embedded.direct().items.create({ id: 'OTHER-1', tenantId, type: 'other' });
    expect(await readDocument<NoteDocument>(tenantId, visible.id, 'note')).toMatchObject({ id: visible.id, title: 'First' });
    expect(await readDocument<NoteDocument>(tenantId, archived.id, 'note')).toMatchObject({ id: archived.id, archived: true });
    expect(await readDocument<NoteDocument>(tenantId, 'OTHER-1', 'note')).toBeUndefined();
    expect(await readDocument<NoteDocument>(tenantId, 'NOTE-none', 'note')).toBeUndefined();
    // Another tenant's partition holds none of them.
    expect(await readDocument<NoteDocument>(randomUUID(), visible.id, 'note')).toBeUndefined();
  });

  it("as readers see it: the kind's 404 for a document that is absent, of another type, or hidden", async () => {
    const tenantId = randomUUID();
    const visible = await storedNote(tenantId);
    const archived = await storedNote(tenantId, { archived: true });
    await embedded.direct().items.create({ id: 'OTHER-1', tenantId, type: 'other' });
    expect(await readVisible(notes, tenantId, visible.id)).toMatchObject({ id: visible.id, title: 'First' });
    for (const id of [archived.id, 'OTHER-1', 'NOTE-none']) {
      await expect(readVisible(notes, tenantId, id)).rejects.toMatchObject({ refusal: 'notFound', messageKey: 'projectNotFound', params: { id } });
    }
    // A kind that hides nothing shows the archived note.
    const { hidden: _, ...showsAll } = notes;
    expect(await readVisible(showsAll, tenantId, archived.id)).toMatchObject({ id: archived.id });
  });
});

describe('changing a document', () => {
  it('replaces it with the change and writes its event in the same batch: one write, which answers the stored document', async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId);
    const from = embedded.store.requests.length;
    const updated = await change(tenantId, before.id, { event: noteEvent });
    const now = (await stored(tenantId, before.id))!;
    expect(now).toMatchObject({ title: 'Second', count: 0 });
    expect(now._etag).not.toBe(before._etag);
    expect(updated).toEqual(now);
    const writes = writesIn(embedded.store.requests.slice(from));
    expect(writes).toHaveLength(1);
    expect(isBatch(writes[0]!)).toBe(true);
    const events = await eventsOf(tenantId);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      eventType: 'project.updated',
      data: { before: { id: before.id, title: 'First', count: 0 }, after: { id: before.id, title: 'Second', count: 0 } },
    });
  });

  it('removes it when the change says REMOVE, with its event, and answers nothing', async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId);
    expect(await change(tenantId, before.id, { change: () => REMOVE, event: noteEvent })).toBeUndefined();
    expect(await stored(tenantId, before.id)).toBeUndefined();
    const events = await eventsOf(tenantId);
    expect(events.map((event) => event.data)).toEqual([{ before: { id: before.id, title: 'First', count: 0 }, removed: true }]);
  });

  it('writes what must go alongside it in the same batch, made from the document as read', async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId);
    const alongside = (current: NoteDocument): OperationInput[] => [
      { operationType: 'Create', resourceBody: { id: 'NOTE-copy', tenantId, type: 'note', title: `Copy of ${current.title}`, count: 0 } },
    ];
    await change(tenantId, before.id, { alongside });
    expect(await stored(tenantId, 'NOTE-copy')).toMatchObject({ title: 'Copy of First' });
    expect(await stored(tenantId, before.id)).toMatchObject({ title: 'Second' });
  });

  it('that leaves the document as stored (its stamp aside) writes nothing: not it, its event, nor what goes alongside; it answers it as read', async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId, { updatedAt: '2026-01-01T00:00:00.000Z', labels: [{ name: 'a', colour: 'red' }] });
    const alongside = vi.fn((): OperationInput[] => [
      { operationType: 'Create', resourceBody: { id: 'NOTE-copy', tenantId, type: 'note', title: 'Copy', count: 0 } },
    ]);
    const from = embedded.store.requests.length;
    const unchanged: ((current: NoteDocument) => NoteDocument)[] = [
      // The same values, stamped anew.
      (current) => ({ ...current, title: 'First', updatedAt: new Date().toISOString() }),
      // Its fields in another order, nested ones too; a field holding undefined is one JSON leaves out.
      ({ labels, count, ...rest }) => ({ count, ...rest, labels: labels!.map(({ name, colour }) => ({ colour, name })), archived: undefined }),
      // Cosmos's own properties are not the change's.
      (current) => ({ ...current, _etag: 'another', _ts: 1 }) as NoteDocument,
    ];
    for (const make of unchanged) {
      const answered = await change(tenantId, before.id, { change: make, event: noteEvent, alongside });
      expect(answered).toEqual(before);
    }
    expect(writesIn(embedded.store.requests.slice(from))).toEqual([]);
    expect(alongside).not.toHaveBeenCalled();
    expect(await stored(tenantId, 'NOTE-copy')).toBeUndefined();
    await expectNothingWritten(before);
  });

  it('that changes a field readers do not see is written with its event: the stored document is what is compared, not the resource', async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId, { labels: [{ name: 'a' }] });
    const changes: ((current: NoteDocument) => NoteDocument)[] = [
      (current) => ({ ...current, touchedAt: 'now' }),
      (current) => ({ ...current, labels: [{ name: 'a', colour: 'red' }] }),
      (current) => ({ ...current, labels: [] }),
      ({ touchedAt: _, ...current }) => current,
    ];
    let previous = before;
    for (const [index, make] of changes.entries()) {
      const answered = await change(tenantId, before.id, { change: make, event: noteEvent });
      const now = (await stored(tenantId, before.id))!;
      expect(now._etag, String(index)).not.toBe(previous._etag);
      expect(answered, String(index)).toEqual(now);
      expect(notes.resourceOf(now)).toEqual(notes.resourceOf(before));
      previous = now;
    }
    expect(await stored(tenantId, before.id)).toMatchObject({ labels: [] });
    expect(await eventsOf(tenantId)).toHaveLength(changes.length);
  });

  it('that would change nothing is still refused a stale expected version with the 412, and the rules its change applies still hold', async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId);
    await change(tenantId, before.id, { change: rename('Changed meanwhile') });
    const changed = (await stored(tenantId, before.id))!;
    const same = (current: NoteDocument) => ({ ...current });
    await expect(change(tenantId, before.id, { expected: [versionOfNote(before)], change: same })).rejects.toMatchObject({ refusal: 'stale' });
    const readOnly = () => {
      throw new RuleError('conflict', 'projectArchived', { id: before.id });
    };
    await expect(change(tenantId, before.id, { change: readOnly })).rejects.toMatchObject({ refusal: 'conflict' });
    await expect(change(tenantId, before.id, { expected: [versionOfNote(changed)], change: same })).resolves.toEqual(changed);
    await expectNothingWritten(changed);
  });

  it('told to touch, writes even a change that leaves the document as it is, with its event', async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId);
    const answered = await change(tenantId, before.id, { change: (current) => ({ ...current }), event: noteEvent, touch: true });
    const now = (await stored(tenantId, before.id))!;
    expect(now._etag).not.toBe(before._etag);
    expect(answered).toEqual(now);
    expect(await eventsOf(tenantId)).toHaveLength(1);
  });

  it('lets the change through when the expected version is the resource as it stands: any of several, *, or none asked', async () => {
    const tenantId = randomUUID();
    const { id } = await storedNote(tenantId);
    const expectations: ((current: NoteDocument) => ExpectedVersion)[] = [
      (current) => [versionOfNote(current)],
      (current) => ['not-this-one', versionOfNote(current)],
      () => '*',
      () => undefined,
    ];
    for (const [index, expected] of expectations.entries()) {
      await change(tenantId, id, { expected: expected((await stored(tenantId, id))!), change: rename(`Title ${index}`) });
      expect(await stored(tenantId, id)).toMatchObject({ title: `Title ${index}` });
    }
  });

  it("compares the version of the resource, not the store's: bookkeeping written since does not make it stale", async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId);
    await embedded
      .direct()
      .item(before.id, tenantId)
      .replace({ ...before, touchedAt: 'now' });
    await change(tenantId, before.id, { expected: [versionOfNote(before)] });
    expect(await stored(tenantId, before.id)).toMatchObject({ title: 'Second', touchedAt: 'now' });
  });

  it('refuses a stale expected version with the 412, and writes nothing', async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId);
    await change(tenantId, before.id, { change: rename('Changed meanwhile') });
    const changed = (await stored(tenantId, before.id))!;
    const attempt = vi.fn(rename('Mine'));
    const refused = change(tenantId, before.id, { expected: [versionOfNote(before)], change: attempt, event: noteEvent });
    await expect(refused).rejects.toBeInstanceOf(RuleError);
    await expect(refused).rejects.toMatchObject({ refusal: 'stale', messageKey: 'preconditionFailed' });
    expect(attempt).not.toHaveBeenCalled();
    await expectNothingWritten(changed);
  });

  it("answers the kind's 404 for a document that is absent, of another type, or hidden, and writes nothing", async () => {
    const tenantId = randomUUID();
    const archived = await storedNote(tenantId, { archived: true });
    await embedded.direct().items.create({ id: 'OTHER-1', tenantId, type: 'other' });
    const attempt = vi.fn(rename('Mine'));
    for (const id of [archived.id, 'OTHER-1', 'NOTE-none']) {
      await expect(change(tenantId, id, { change: attempt, event: noteEvent })).rejects.toMatchObject({
        refusal: 'notFound',
        messageKey: 'projectNotFound',
        params: { id },
      });
    }
    expect(attempt).not.toHaveBeenCalled();
    await expectNothingWritten(archived);
  });

  it('reads the document its own way when told, instead of as readers see it', async () => {
    const tenantId = randomUUID();
    const archived = await storedNote(tenantId, { archived: true });
    await change(tenantId, archived.id, { read: async () => (await readDocument<NoteDocument>(tenantId, archived.id, 'note'))! });
    expect(await stored(tenantId, archived.id)).toMatchObject({ title: 'Second', archived: true });
  });

  it('that cannot be written whole writes nothing, neither the document nor its event, and fails with the status of what failed', async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId);
    const taken = await storedNote(tenantId);
    const attempt = vi.fn(rename('Mine'));
    // A create of a document that exists fails the batch (409) after the replace and the event.
    const alongside = (): OperationInput[] => [{ operationType: 'Create', resourceBody: { id: taken.id, tenantId, type: 'note', title: 'Again', count: 0 } }];
    const failed = change(tenantId, before.id, { change: attempt, event: noteEvent, alongside });
    await expect(failed).rejects.toMatchObject({ code: 409, message: 'A conditional write failed: 424,424,409' });
    await expect(failed).rejects.not.toBeInstanceOf(RuleError);
    expect(attempt).toHaveBeenCalledTimes(1);
    await expectNothingWritten(before);
    expect((await stored(tenantId, taken.id))!.title).toBe('First');
  });

  it('does not lose a change another instance wrote between its read and its write: it applies its own again, to what it finds', async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId);
    replacedMeanwhile(before, { title: 'Theirs', count: 10 });
    const seen: number[] = [];
    const updated = await change(tenantId, before.id, {
      change: (current) => (seen.push(current.count), { ...current, count: current.count + 1 }),
      event: noteEvent,
    });
    expect(seen).toEqual([0, 10]);
    expect(updated).toMatchObject({ title: 'Theirs', count: 11 });
    expect(await stored(tenantId, before.id)).toMatchObject({ title: 'Theirs', count: 11 });
    // Only the write that landed made its event.
    expect((await eventsOf(tenantId)).map((event) => event.data)).toEqual([
      { before: { id: before.id, title: 'Theirs', count: 10 }, after: { id: before.id, title: 'Theirs', count: 11 } },
    ]);
  });

  it('decides a removal again when another instance changed the document between its read and its delete', async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId);
    replacedMeanwhile(before, { title: 'Keep' });
    await change(tenantId, before.id, { change: (current) => (current.title === 'Keep' ? { ...current, count: 1 } : REMOVE) });
    expect(await stored(tenantId, before.id)).toMatchObject({ title: 'Keep', count: 1 });
  });

  it('refuses with the 412 when another instance changed the resource between its read and its write, and writes nothing', async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId);
    replacedMeanwhile(before, { title: 'Theirs' });
    const refused = change(tenantId, before.id, { expected: [versionOfNote(before)], change: rename('Mine'), event: noteEvent });
    await expect(refused).rejects.toMatchObject({ refusal: 'stale', messageKey: 'preconditionFailed' });
    expect(await stored(tenantId, before.id)).toMatchObject({ title: 'Theirs' });
    expect(await eventsOf(tenantId)).toEqual([]);
  });

  it("answers the kind's 404 when another instance deleted the document between its read and its write", async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId);
    beforeRequest(embedded.store, isBatch, async () => {
      await embedded.direct().item(before.id, tenantId).delete();
    });
    const refused = change(tenantId, before.id, { event: noteEvent });
    await expect(refused).rejects.toBeInstanceOf(RuleError);
    await expect(refused).rejects.toMatchObject({ refusal: 'notFound', messageKey: 'projectNotFound', params: { id: before.id } });
    expect(await stored(tenantId, before.id)).toBeUndefined();
    expect(await eventsOf(tenantId)).toEqual([]);
  });

  it('under contention that outlasts its 25 attempts, answers a 409 that says when to come back, and writes nothing', async () => {
    const tenantId = randomUUID();
    // Longer than the 100 characters an error repeats of an id.
    const before = await storedNote(tenantId, { id: `NOTE-${'x'.repeat(150)}` });
    // Another instance changes the note before each of this one's writes.
    embedded.store.intercept = async (record) => {
      if (isBatch(record))
        await embedded
          .direct()
          .item(before.id, tenantId)
          .patch([{ op: 'incr', path: '/count', value: 1 }]);
      return undefined;
    };
    const attempt = vi.fn((current: NoteDocument) => ({ ...current, title: 'Mine' }));
    const refused = change(tenantId, before.id, { change: attempt, event: noteEvent });
    await expect(refused).rejects.toBeInstanceOf(RuleError);
    await expect(refused).rejects.toMatchObject({
      refusal: 'contended',
      messageKey: 'changeContended',
      params: { id: before.id.slice(0, 100) },
    });
    expect(attempt).toHaveBeenCalledTimes(25);
    expect(await stored(tenantId, before.id)).toMatchObject({ title: 'First', count: 25 });
    expect(await eventsOf(tenantId)).toEqual([]);
  });

  it('under contention that ends by its 25th attempt, gets its change written', async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId);
    let clashes = 24;
    embedded.store.intercept = async (record) => {
      if (isBatch(record) && clashes-- > 0)
        await embedded
          .direct()
          .item(before.id, tenantId)
          .patch([{ op: 'incr', path: '/count', value: 1 }]);
      return undefined;
    };
    expect(await change(tenantId, before.id, { change: rename('Mine') })).toMatchObject({ title: 'Mine', count: 24 });
  });

  it('fails when the store answers its batch without a result, and does not take that for a success', async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId);
    embedded.store.intercept = (record) => (isBatch(record) ? ((embedded.store.intercept = undefined), { status: 200, body: [] }) : undefined);
    await expect(change(tenantId, before.id, { event: noteEvent })).rejects.toThrow(/^A conditional write failed: $/);
    await expectNothingWritten(before);
  });

  it('to one document within one instance take turns and never clash', async () => {
    const tenantId = randomUUID();
    const before = await storedNote(tenantId);
    const from = embedded.store.requests.length;
    const seen: number[] = [];
    await Promise.all(
      Array.from({ length: 8 }, () =>
        change(tenantId, before.id, { change: (current) => (seen.push(current.count), { ...current, count: current.count + 1 }) }),
      ),
    );
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(await stored(tenantId, before.id)).toMatchObject({ count: 8 });
    // One write each: none was sent twice after a clash.
    expect(writesIn(embedded.store.requests.slice(from))).toHaveLength(8);
  });

  it('to different documents do not wait for each other', async () => {
    const tenantId = randomUUID();
    const first = await storedNote(tenantId);
    const second = await storedNote(tenantId);
    const held = gate();
    const slow = change(tenantId, first.id, { change: async (current) => (await held.pass(), { ...current, title: 'Slow' }) });
    await held.reached;
    await change(tenantId, second.id, { change: rename('Quick') });
    expect(await stored(tenantId, second.id)).toMatchObject({ title: 'Quick' });
    held.release();
    await slow;
    expect(await stored(tenantId, first.id)).toMatchObject({ title: 'Slow' });
  });

  it('of one document in two tenants do not wait for each other', async () => {
    const [one, other] = [randomUUID(), randomUUID()];
    const first = await storedNote(one, { id: 'NOTE-same' });
    await storedNote(other, { id: 'NOTE-same' });
    const held = gate();
    const slow = change(one, first.id, { change: async (current) => (await held.pass(), { ...current, title: 'Slow' }) });
    await held.reached;
    await change(other, first.id, { change: rename('Quick') });
    held.release();
    await slow;
    expect(await stored(other, first.id)).toMatchObject({ title: 'Quick' });
  });
});

describe('oneAtATime', () => {
  it('runs what a key names one after another, each answering its own result, a failure not stopping the next', async () => {
    const key = randomUUID();
    const order: string[] = [];
    const second = gate();
    const failing = oneAtATime(key, async () => {
      order.push('first');
      throw new Error('first failed');
    });
    const next = oneAtATime(key, async () => {
      order.push('second starts');
      await second.pass();
      order.push('second ends');
      return 'second';
    });
    await expect(failing).rejects.toThrow('first failed');
    await second.reached;
    // Comes after the first has finished, while the second runs: it waits for the second.
    const third = oneAtATime(key, async () => (order.push('third'), 'third'));
    second.release();
    expect(await next).toBe('second');
    expect(await third).toBe('third');
    expect(order).toEqual(['first', 'second starts', 'second ends', 'third']);
    // With nothing under way, the next runs at once.
    expect(await oneAtATime(key, async () => 'fourth')).toBe('fourth');
  });
});

describe('batchFailure', () => {
  const statuses = (...codes: number[]) => codes.map((statusCode) => ({ statusCode, requestCharge: 1 }));

  it("carries the status of the operation that failed, not the 424 of those that did not run, and lists every operation's", () => {
    expect(batchFailure('Writing', statuses(424, 409, 424))).toMatchObject({ code: 409, message: 'Writing failed: 424,409,424' });
    expect(batchFailure('Writing', statuses(424, 400))).toMatchObject({ code: 400 });
    expect(batchFailure('Writing', statuses(201, 429))).toMatchObject({ code: 429 });
  });

  it('without a failure of its own, carries the first status, or none for no answer', () => {
    expect(batchFailure('Writing', statuses(424, 424))).toMatchObject({ code: 424, message: 'Writing failed: 424,424' });
    const empty = batchFailure('Writing', []);
    expect(empty.message).toBe('Writing failed: ');
    expect(empty).toHaveProperty('code', undefined);
  });
});

describe('creating a document', () => {
  type NewNote = Omit<NoteDocument, '_etag'>;
  const newNote = (tenantId: string, number: number, title = 'New'): NewNote => ({ id: `NOTE-${number}`, tenantId, type: 'note', title, count: 0 });

  function create(
    principal: Principal,
    options: Partial<Parameters<typeof createDocument<NewNote, Note, unknown>>[0]> = {},
  ): ReturnType<typeof createDocument<NewNote, Note, unknown>> {
    return createDocument<NewNote, Note, unknown>({
      kind: notes,
      tenantId: principal.tenantId,
      actor: principal.objectId,
      idempotency: undefined,
      request: { title: 'New' },
      sequence: 'notes',
      prepare: (number) => ({ document: newNote(principal.tenantId, number) }),
      ...options,
    });
  }

  const noteCreated = (resource: Note): NewEvent => ({ type: 'project.created', data: resource });

  it('takes the next number of its sequence and stores the document, its resource answered', async () => {
    const principal = adminCaller(randomUUID());
    expect(await create(principal)).toEqual({ resource: { id: 'NOTE-1001', title: 'New', count: 0 }, replayed: false });
    expect(await create(principal)).toEqual({ resource: { id: 'NOTE-1002', title: 'New', count: 0 }, replayed: false });
    expect((await storedOfType<NoteDocument>(principal.tenantId, 'note')).map((document) => document.id).sort()).toEqual(['NOTE-1001', 'NOTE-1002']);
  });

  it('writes its event with the document, both or neither', async () => {
    const principal = adminCaller(randomUUID());
    expect(await create(principal, { event: noteCreated })).toMatchObject({ resource: { id: 'NOTE-1001' } });
    expect((await eventsOf(principal.tenantId)).map((event) => [event.eventType, event.data])).toEqual([
      ['project.created', { id: 'NOTE-1001', title: 'New', count: 0 }],
    ]);
    // An id that is taken fails the create, and its event with it.
    const again = create(principal, { event: noteCreated, prepare: () => ({ document: newNote(principal.tenantId, 1001, 'Again') }) });
    await expect(again).rejects.toMatchObject({ code: 409, message: 'Creating in notes failed: 409,424' });
    expect(await eventsOf(principal.tenantId)).toHaveLength(1);
    expect(await stored(principal.tenantId, 'NOTE-1001')).toMatchObject({ title: 'New' });
  });

  it('answers a repeated Idempotency-Key with the first result, creating nothing more, and refuses it for another request', async () => {
    const principal = adminCaller(randomUUID());
    const idempotency: Idempotency = { key: 'key-1', scope: 'notes' };
    const first = await create(principal, { idempotency, event: noteCreated });
    expect(first).toEqual({ resource: { id: 'NOTE-1001', title: 'New', count: 0 }, replayed: false });
    expect(await create(principal, { idempotency, event: noteCreated })).toEqual({ resource: first.resource, replayed: true });
    await expect(create(principal, { idempotency, request: { title: 'Other' } })).rejects.toMatchObject({
      refusal: 'keyReused',
      messageKey: 'idempotencyKeyReused',
    });
    expect(await storedOfType(principal.tenantId, 'note')).toHaveLength(1);
    expect(await eventsOf(principal.tenantId)).toHaveLength(1);
    // The key is the caller's own: another caller's request under it creates.
    expect(await create(adminCaller(principal.tenantId), { idempotency })).toMatchObject({ resource: { id: 'NOTE-1002' }, replayed: false });
  });

  it('with an Idempotency-Key alone still records its result', async () => {
    const principal = adminCaller(randomUUID());
    const idempotency: Idempotency = { key: 'key-1', scope: 'notes' };
    const first = await create(principal, { idempotency });
    expect(await create(principal, { idempotency })).toEqual({ resource: first.resource, replayed: true });
    expect(await storedOfType(principal.tenantId, 'note')).toHaveLength(1);
  });

  it("of two concurrent requests with one Idempotency-Key, the one that loses the race answers with the winner's result", async () => {
    const principal = adminCaller(randomUUID());
    const idempotency: Idempotency = { key: 'key-1', scope: 'notes' };
    let winner: Awaited<ReturnType<typeof create>> | undefined;
    beforeRequest(embedded.store, isBatch, async () => {
      winner = await create(principal, { idempotency, event: noteCreated });
    });
    const loser = await create(principal, { idempotency, event: noteCreated });
    expect(winner).toEqual({ resource: { id: 'NOTE-1002', title: 'New', count: 0 }, replayed: false });
    expect(loser).toEqual({ resource: winner!.resource, replayed: true });
    expect((await storedOfType<NoteDocument>(principal.tenantId, 'note')).map((document) => document.id)).toEqual(['NOTE-1002']);
    expect(await eventsOf(principal.tenantId)).toHaveLength(1);
  });

  it('never answers a replay without a result: a record of the key that is gone or expired by the time it is read fails the create', async () => {
    const principal = adminCaller(randomUUID());
    const idempotency: Idempotency = { key: 'key-1', scope: 'notes' };
    const request = { title: 'New' };
    const { recordId, requestHash } = idempotentRequest(idempotency, principal.objectId, request);
    // A record of two days ago appears just before the batch: the batch fails on it, and it is too old to answer with.
    beforeRequest(embedded.store, isBatch, async () => {
      const createdAt = new Date(Date.now() - 2 * 24 * 60 * 60 * 1000).toISOString();
      await embedded.direct().items.create({
        id: recordId,
        tenantId: principal.tenantId,
        type: 'idempotency',
        requestHash,
        snapshot: { id: 'NOTE-old' },
        createdAt,
        ttl: 86_400,
      });
    });
    await expect(create(principal, { idempotency, request, event: noteCreated })).rejects.toMatchObject({
      code: 409,
      message: 'Creating in notes failed: 409,424,424',
    });
    expect(await storedOfType(principal.tenantId, 'note')).toEqual([]);
  });

  it('fails when the store answers its batch without a result, and does not take that for a success', async () => {
    const principal = adminCaller(randomUUID());
    embedded.store.intercept = (record) => (isBatch(record) ? ((embedded.store.intercept = undefined), { status: 200, body: [] }) : undefined);
    const idempotency: Idempotency = { key: 'key-1', scope: 'notes' };
    await expect(create(principal, { idempotency, event: noteCreated })).rejects.toThrow(/^Creating in notes failed: $/);
    expect(await storedOfType(principal.tenantId, 'note')).toEqual([]);
  });

  it('hands what its check found to the document it prepares', async () => {
    const principal = adminCaller(randomUUID());
    const created = await create(principal, {
      check: async () => 'Checked',
      prepare: (number, found) => ({ document: newNote(principal.tenantId, number, found as string) }),
    });
    expect(created.resource).toEqual({ id: 'NOTE-1001', title: 'Checked', count: 0 });
  });

  it('refused by its check, answers only once its number is reserved: nothing of the create runs after the answer', async () => {
    const principal = adminCaller(randomUUID());
    const held = gate();
    embedded.store.intercept = (record) =>
      record.method === 'PATCH' && record.path.endsWith('/docs/sequence-notes') && record.partitionKey?.includes(principal.tenantId)
        ? ((embedded.store.intercept = undefined), held.pass().then(() => undefined))
        : undefined;
    let answered = false;
    const outcome = create(principal, { check: () => Promise.reject(new Error('refused')) })
      .then(
        () => 'created',
        (error: Error) => error.message,
      )
      .finally(() => (answered = true));
    // The check failed at once; the reservation of the create's number is at the store, held.
    await held.reached;
    const answeredWhileHeld = answered;
    held.release();
    expect(await outcome).toBe('refused');
    expect(answeredWhileHeld).toBe(false);
    // The number is not given back: a gap.
    expect(await create(principal)).toMatchObject({ resource: { id: 'NOTE-1002' } });
  });

  /** A guard operation that fails with `status` in a batch of the tenant holding `parent`. */
  function failingGuard(status: 404 | 409 | 412, parent: NoteDocument): OperationInput {
    if (status === 404) return stillExists({ ...parent, id: 'NOTE-gone' });
    if (status === 409) return { operationType: 'Create', resourceBody: { ...parent } as unknown as JSONObject };
    return { operationType: 'Replace', id: parent.id, partitionKey: parent.tenantId, ifMatch: '"stale"', resourceBody: { ...parent } as unknown as JSONObject };
  }

  it.each([404, 409, 412] as const)('guarded, tries the check and the create again after the guard failed with %i, keeping its number', async (status) => {
    const principal = adminCaller(randomUUID());
    const parent = await storedNote(principal.tenantId);
    const check = vi.fn(async () => parent);
    const prepare = vi.fn((number: number, found: unknown) => ({
      document: newNote(principal.tenantId, number),
      guard: prepare.mock.calls.length === 1 ? failingGuard(status, found as NoteDocument) : stillExists(found as NoteDocument),
    }));
    expect(await create(principal, { check, prepare })).toMatchObject({ resource: { id: 'NOTE-1001' }, replayed: false });
    expect(check).toHaveBeenCalledTimes(2);
    expect(prepare.mock.calls.map(([number]) => number)).toEqual([1001, 1001]);
    expect(await stored(principal.tenantId, 'NOTE-1001')).toMatchObject({ type: 'note' });
  });

  it('guarded by a document that goes before its write, fails as the check then does, and creates nothing', async () => {
    const principal = adminCaller(randomUUID());
    const parent = await storedNote(principal.tenantId);
    const check = vi.fn(() => readVisible(notes, principal.tenantId, parent.id));
    beforeRequest(embedded.store, isBatch, async () => {
      await embedded.direct().item(parent.id, principal.tenantId).delete();
    });
    const idempotency: Idempotency = { key: 'key-1', scope: 'notes' };
    const refused = create(principal, {
      idempotency,
      event: noteCreated,
      check,
      prepare: (number, found) => ({ document: newNote(principal.tenantId, number), guard: stillExists(found as NoteDocument) }),
    });
    await expect(refused).rejects.toMatchObject({ refusal: 'notFound', messageKey: 'projectNotFound', params: { id: parent.id } });
    expect(check).toHaveBeenCalledTimes(2);
    expect(await storedOfType(principal.tenantId, 'note')).toEqual([]);
    expect(await storedOfType(principal.tenantId, 'idempotency')).toEqual([]);
    expect(await eventsOf(principal.tenantId)).toEqual([]);
  });

  it('guarded by what keeps failing, answers after five tries a 409 that says when to come back, and leaves no record of its key', async () => {
    const principal = adminCaller(randomUUID());
    const parent = await storedNote(principal.tenantId);
    const check = vi.fn(async () => parent);
    const prepare = vi.fn((number: number) => ({ document: newNote(principal.tenantId, number), guard: failingGuard(404, parent) }));
    const idempotency: Idempotency = { key: 'key-1', scope: 'notes' };
    const refused = create(principal, { idempotency, check, prepare });
    await expect(refused).rejects.toBeInstanceOf(RuleError);
    await expect(refused).rejects.toMatchObject({
      refusal: 'contended',
      messageKey: 'changeContended',
      params: { id: 'notes' },
    });
    expect(prepare).toHaveBeenCalledTimes(5);
    expect(check).toHaveBeenCalledTimes(5);
    expect(await storedOfType(principal.tenantId, 'idempotency')).toEqual([]);
    expect(await storedOfType<NoteDocument>(principal.tenantId, 'note')).toEqual([expect.objectContaining({ id: parent.id })]);
    // The key is free: the same request creates once the guard passes.
    const created = await create(principal, {
      idempotency,
      check,
      prepare: (number) => ({ document: newNote(principal.tenantId, number), guard: stillExists(parent) }),
    });
    expect(created).toMatchObject({ resource: { id: 'NOTE-1002' }, replayed: false });
  });
});
