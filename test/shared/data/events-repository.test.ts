/**
 * The outbox of events (shared/data/events.ts) and their list (shared/data/events-repository.ts), in
 * process, against the embedded Cosmos store of the local stack started by this file: an event as a
 * change writes it (kept a week), read back in its tenant only, and GET /api/events' list and read:
 * the tenant's events newest first, its filters and cursors, pings left out. Another tenant's events
 * are stored under the same ids next to the caller's, and the list's queries must name the caller's
 * partition, where Azure runs them (read at the proxy, test/support/cosmos-proxy.ts).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EVENT_RETENTION_SECONDS, eventDocument, eventWrite, payloadOf, readEvent, type EventDocument } from '../../../shared/data/events.js';
import { getEvent, listEvents } from '../../../shared/data/events-repository.js';
import { readsRagJobEvents } from '../../../shared/roles.js';
import type { EventType, ListEventsQuery } from '../../../shared/schemas/events.js';
import { failureOf } from '../../support/failures.js';
import { embeddedStoreForTests } from '../../support/embedded-store.js';
import { adminCaller } from '../../support/principals.js';

const embedded = embeddedStoreForTests();

/** An event of the tenant as a change writes it, at that time. */
async function storedEvent(tenantId: string, timestamp: string, type: EventType = 'project.created', webhookId?: string): Promise<EventDocument> {
  const document = { ...eventDocument(tenantId, { type, data: { id: `PRJ-${randomUUID()}` }, ...(webhookId ? { webhookId } : {}) }), timestamp };
  const { resource } = await embedded.direct().items.create(document);
  return resource as unknown as EventDocument;
}

/** The event as the list and GET /api/events/{eventId} show it. */
const shown = (event: EventDocument) => ({ id: event.id, type: event.eventType, timestamp: event.timestamp, data: event.data });

const query = (fields: Partial<ListEventsQuery> = {}): ListEventsQuery => ({ sort: '-timestamp', limit: 50, cursor: undefined, ...fields });

describe('eventDocument and eventWrite', () => {
  it('make an event of the tenant: a Standard Webhooks message id, its type, the time of the change, its data, kept a week', () => {
    const tenantId = randomUUID();
    const before = Date.now();
    const event = eventDocument(tenantId, { type: 'task.updated', data: { id: 'TSK-1', title: 'Draft' } });
    const after = Date.now();
    expect(event).toEqual({
      id: expect.stringMatching(/^msg_[0-9a-f]{32}$/),
      tenantId,
      type: 'event',
      eventType: 'task.updated',
      timestamp: event.timestamp,
      data: { id: 'TSK-1', title: 'Draft' },
      ttl: 7 * 24 * 60 * 60,
    });
    expect('webhookId' in event).toBe(false);
    expect(EVENT_RETENTION_SECONDS).toBe(604_800);
    expect(Date.parse(event.timestamp)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(event.timestamp)).toBeLessThanOrEqual(after);
    expect(event.timestamp).toBe(new Date(event.timestamp).toISOString());
    expect(eventDocument(tenantId, { type: 'task.updated', data: {} }).id).not.toBe(event.id);
  });

  it('name the subscription a ping is for', () => {
    expect(eventDocument('t', { type: 'webhook.ping', data: {}, webhookId: 'WHK-7' })).toMatchObject({ eventType: 'webhook.ping', webhookId: 'WHK-7' });
  });

  it('write the event beside a change as a create in the change’s batch', async () => {
    const tenantId = randomUUID();
    const write = eventWrite(tenantId, { type: 'project.deleted', data: { id: 'PRJ-1', deletedTasks: 2 } });
    expect(write).toEqual({ operationType: 'Create', resourceBody: expect.objectContaining({ tenantId, type: 'event', eventType: 'project.deleted' }) });
    const { result } = await embedded.direct().items.batch([write], tenantId);
    expect(result?.[0]?.statusCode).toBe(201);
    const id = (write as unknown as { resourceBody: EventDocument }).resourceBody.id;
    expect(await readEvent(tenantId, id)).toMatchObject({ id, data: { id: 'PRJ-1', deletedTasks: 2 }, ttl: EVENT_RETENTION_SECONDS });
  });
});

describe('readEvent and payloadOf', () => {
  it('read the tenant’s event, none of another tenant, none that is not an event, and give a receiver its type, time and data only', async () => {
    const tenantId = randomUUID();
    const event = await storedEvent(tenantId, '2026-11-02T00:00:00.000Z');
    expect(await readEvent(tenantId, event.id)).toEqual(event);
    expect(await readEvent(randomUUID(), event.id)).toBeUndefined();
    expect(await readEvent(tenantId, `msg_${'0'.repeat(32)}`)).toBeUndefined();
    const elsewhere = randomUUID();
    await embedded.direct().items.create({ id: event.id, tenantId: elsewhere, type: 'delivery' });
    expect(await readEvent(elsewhere, event.id)).toBeUndefined();

    const payload = payloadOf(event);
    expect(payload).toEqual({ type: 'project.created', timestamp: '2026-11-02T00:00:00.000Z', data: event.data });
    expect(Object.keys(payload)).toEqual(['type', 'timestamp', 'data']);
  });
});

describe('listEvents', () => {
  /** Events of a tenant of its own on the 1st to the 4th, alternating types, a ping among them; another tenant's of the same ids beside them. */
  async function tenantWithEvents() {
    const principal = adminCaller();
    const events = [
      await storedEvent(principal.tenantId, '2026-11-01T00:00:00.000Z', 'project.created'),
      await storedEvent(principal.tenantId, '2026-11-02T00:00:00.000Z', 'task.created'),
      await storedEvent(principal.tenantId, '2026-11-03T00:00:00.000Z', 'project.created'),
      await storedEvent(principal.tenantId, '2026-11-04T00:00:00.000Z', 'task.created'),
    ];
    await storedEvent(principal.tenantId, '2026-11-05T00:00:00.000Z', 'webhook.ping', 'WHK-1001');
    const otherTenantId = randomUUID();
    for (const event of events) await embedded.direct().items.create({ ...eventDocument(otherTenantId, { type: event.eventType, data: {} }), id: event.id });
    return { principal, shownEvents: events.map(shown) };
  }

  it('lists the tenant’s events newest first, without pings, a page at a time, none of another tenant', async () => {
    const { principal, shownEvents } = await tenantWithEvents();
    const [first, second, third, fourth] = shownEvents;
    const from = embedded.store.requests.length;
    expect(await listEvents(principal.tenantId, readsRagJobEvents(principal.roles), query())).toEqual({
      items: [fourth, third, second, first],
      nextCursor: undefined,
    });
    const page = await listEvents(principal.tenantId, readsRagJobEvents(principal.roles), query({ limit: 3 }));
    expect(page.items).toEqual([fourth, third, second]);
    expect(await listEvents(principal.tenantId, readsRagJobEvents(principal.roles), query({ limit: 3, cursor: page.nextCursor }))).toEqual({
      items: [first],
      nextCursor: undefined,
    });
    const queries = embedded.store.requests.slice(from).filter((request) => request.isQuery);
    expect(queries.length).toBeGreaterThanOrEqual(3);
    for (const sent of queries) expect(sent.partitionKey).toBe(JSON.stringify([principal.tenantId]));
    expect(await listEvents(adminCaller().tenantId, true, query())).toEqual({ items: [], nextCursor: undefined });
  });

  it('keeps to the type and to events at or after the time given, each or both', async () => {
    const { principal, shownEvents } = await tenantWithEvents();
    const [first, second, third, fourth] = shownEvents;
    expect((await listEvents(principal.tenantId, readsRagJobEvents(principal.roles), query({ type: 'project.created' }))).items).toEqual([third, first]);
    expect((await listEvents(principal.tenantId, readsRagJobEvents(principal.roles), query({ since: '2026-11-02T00:00:00.000Z' }))).items).toEqual([
      fourth,
      third,
      second,
    ]);
    expect(
      (await listEvents(principal.tenantId, readsRagJobEvents(principal.roles), query({ type: 'task.created', since: '2026-11-02T00:00:00.001Z' }))).items,
    ).toEqual([fourth]);
    expect((await listEvents(principal.tenantId, readsRagJobEvents(principal.roles), query({ type: 'rag.job.failed' }))).items).toEqual([]);
  });

  it('lists them oldest first with sort=timestamp, from the time given, a page at a time: the order to catch up in', async () => {
    const { principal, shownEvents } = await tenantWithEvents();
    const [first, second, third, fourth] = shownEvents;
    expect((await listEvents(principal.tenantId, readsRagJobEvents(principal.roles), query({ sort: 'timestamp' }))).items).toEqual([
      first,
      second,
      third,
      fourth,
    ]);
    const page = await listEvents(
      principal.tenantId,
      readsRagJobEvents(principal.roles),
      query({ sort: 'timestamp', since: '2026-11-02T00:00:00.000Z', limit: 2 }),
    );
    expect(page.items).toEqual([second, third]);
    expect(
      await listEvents(
        principal.tenantId,
        readsRagJobEvents(principal.roles),
        query({ sort: 'timestamp', since: '2026-11-02T00:00:00.000Z', limit: 2, cursor: page.nextCursor }),
      ),
    ).toEqual({
      items: [fourth],
      nextCursor: undefined,
    });
    // A cursor goes on in the order it was made in, and only there.
    expect(
      await failureOf(
        listEvents(principal.tenantId, readsRagJobEvents(principal.roles), query({ since: '2026-11-02T00:00:00.000Z', limit: 2, cursor: page.nextCursor })),
      ),
    ).toMatchObject({
      refusal: 'invalid',
      messageKey: 'cursorForOtherQuery',
    });
  });

  it('refuses a cursor of a list with other filters', async () => {
    const { principal } = await tenantWithEvents();
    const { nextCursor } = await listEvents(principal.tenantId, readsRagJobEvents(principal.roles), query({ limit: 1, type: 'task.created' }));
    expect(
      await failureOf(listEvents(principal.tenantId, readsRagJobEvents(principal.roles), query({ limit: 1, type: 'project.created', cursor: nextCursor }))),
    ).toMatchObject({
      refusal: 'invalid',
      messageKey: 'cursorForOtherQuery',
    });
    expect(
      await failureOf(
        listEvents(principal.tenantId, readsRagJobEvents(principal.roles), query({ limit: 1, since: '2026-11-01T00:00:00.000Z', cursor: nextCursor })),
      ),
    ).toMatchObject({
      refusal: 'invalid',
      messageKey: 'cursorForOtherQuery',
    });
  });
});

describe('the RAG jobs’ events', () => {
  it('are listed and read only for a caller who may read RAG jobs: every one of their types, and nothing else left out', async () => {
    const tenantId = randomUUID();
    const project = await storedEvent(tenantId, '2026-11-01T00:00:00.000Z', 'project.created');
    const succeeded = await storedEvent(tenantId, '2026-11-02T00:00:00.000Z', 'rag.job.succeeded');
    const failed = await storedEvent(tenantId, '2026-11-03T00:00:00.000Z', 'rag.job.failed');
    const task = await storedEvent(tenantId, '2026-11-04T00:00:00.000Z', 'task.created');
    await storedEvent(tenantId, '2026-11-05T00:00:00.000Z', 'webhook.ping', 'WHK-1001');
    expect((await listEvents(tenantId, true, query())).items).toEqual([task, failed, succeeded, project].map(shown));
    expect((await listEvents(tenantId, false, query())).items).toEqual([task, project].map(shown));
    for (const event of [succeeded, failed]) {
      expect(await getEvent(tenantId, true, event.id)).toEqual(shown(event));
      expect(await failureOf(getEvent(tenantId, false, event.id))).toMatchObject({ refusal: 'notFound', messageKey: 'eventNotFound' });
    }
    expect(await getEvent(tenantId, false, task.id)).toEqual(shown(task));
  });
});

describe('getEvent', () => {
  it('shows the tenant’s event as the list does, and is a 404 for a ping, another tenant’s event, or none', async () => {
    const principal = adminCaller();
    const event = await storedEvent(principal.tenantId, '2026-11-02T00:00:00.000Z', 'task.deleted');
    const ping = await storedEvent(principal.tenantId, '2026-11-02T00:00:00.000Z', 'webhook.ping', 'WHK-1001');
    expect(await getEvent(principal.tenantId, readsRagJobEvents(principal.roles), event.id)).toEqual(shown(event));
    expect(Object.keys(await getEvent(principal.tenantId, readsRagJobEvents(principal.roles), event.id))).toEqual(['id', 'type', 'timestamp', 'data']);
    const notFound = (id: string) => ({ refusal: 'notFound', messageKey: 'eventNotFound', params: { id } });
    expect(await failureOf(getEvent(principal.tenantId, readsRagJobEvents(principal.roles), ping.id))).toMatchObject(notFound(ping.id));
    expect(await failureOf(getEvent(adminCaller().tenantId, true, event.id))).toMatchObject(notFound(event.id));
    const long = `msg_${'a'.repeat(120)}`;
    expect(await failureOf(getEvent(principal.tenantId, readsRagJobEvents(principal.roles), long))).toMatchObject(notFound(long.slice(0, 100)));
  });
});
