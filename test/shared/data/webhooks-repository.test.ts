/**
 * Webhook subscriptions (shared/data/webhooks-repository.ts), in process, against the embedded Cosmos
 * store of the local stack started by this file: the 20 slots a tenant's subscriptions hold, the
 * secrets a rotation keeps signing, the changes and their preconditions, the list, and what a
 * delivery's end does to its subscription. The app reaches the store through a proxy
 * (test/support/cosmos-proxy.ts) that can hold a request while another instance, which goes to the
 * store directly, writes first.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../shared/auth/principal.js';
import { DISABLED_BECAUSE } from '../../../shared/domain/webhooks.js';
import { versionOf } from '../../../shared/domain/versions.js';
import { RuleError } from '../../../shared/domain/errors.js';
import { signingSecrets } from '../../../shared/domain/webhooks.js';
import { DependencyUnavailableError } from '../../../shared/errors.js';
import {
  allWebhooks,
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhooks,
  readWebhook,
  recordDeliveryEnd,
  rotateSecret,
  updateWebhook,
  type WebhookDocument,
} from '../../../shared/data/webhooks-repository.js';
import { CHANGE_EVENT_TYPES } from '../../../shared/schemas/events.js';
import type { Webhook } from '../../../shared/schemas/webhooks.js';
import { newSecret } from '../../../shared/webhooks/signing.js';
import { beforeRequest, type CosmosRequestRecord, isBatch, STORE_FAILURE, writesIn } from '../../support/cosmos-proxy.js';
import { documentsOf, embeddedStoreForTests } from '../../support/embedded-store.js';
import { adminCaller } from '../../support/principals.js';
import { gate } from '../../support/wait.js';

const embedded = embeddedStoreForTests();

const DAY_MS = 24 * 60 * 60 * 1000;
const SLOTS = Array.from({ length: 20 }, (_, index) => index + 1);

/** The tenant's documents of one type, as another instance reads them. */
const storedOfType = <T>(tenantId: string, type: string) => documentsOf<T>(embedded.direct(), tenantId, type);

/** A subscription of the caller's tenant, made as the create endpoint makes it. */
async function subscribe(principal: Principal, url = 'https://receiver.example/hook') {
  const { resource } = await createWebhook(principal.tenantId, principal.objectId, { url }, newSecret(), ['project.created'], undefined);
  return resource;
}

async function stored<T = WebhookDocument>(tenantId: string, id: string): Promise<T | undefined> {
  const { resource } = await embedded.direct().item(id, tenantId).read<T & object>();
  return resource;
}

const subscriptionsOf = (tenantId: string) => storedOfType<WebhookDocument>(tenantId, 'webhook');
const slotsOf = (tenantId: string) => storedOfType<{ id: string; webhookId: string }>(tenantId, 'webhookSlot');

/** Changes a stored subscription as another writer (or time passing) would. */
async function storedChange(tenantId: string, id: string, fields: Partial<WebhookDocument>): Promise<WebhookDocument> {
  const current = (await stored(tenantId, id))!;
  const { resource } = await embedded
    .direct()
    .item(id, tenantId)
    .replace({ ...current, ...fields });
  return resource as unknown as WebhookDocument;
}

/** A subscription another instance made: the subscription and the slot it holds. */
async function subscribedElsewhere(tenantId: string, slot: number): Promise<void> {
  const id = `WHK-${900000 + slot}`;
  await embedded.direct().items.create({ id: `webhook-slot-${slot}`, tenantId, type: 'webhookSlot', webhookId: id });
  const now = new Date().toISOString();
  await embedded.direct().items.create({
    ...{ id, tenantId, type: 'webhook', url: 'https://elsewhere.example/hook', events: ['project.created'], description: '' },
    ...{ active: true, disabledReason: null, createdAt: now, updatedAt: now, secret: newSecret(), retiredSecrets: [], slot, failedInARow: 0 },
  });
}

/** The batch that writes the tenant's documents. */
const isBatchOf = (tenantId: string) => (record: CosmosRequestRecord) => isBatch(record) && record.body.includes(tenantId);

/** The write that makes one of the tenant's subscriptions, batch or not. */
const isSubscribing = (tenantId: string) => (record: CosmosRequestRecord) =>
  record.method === 'POST' && !record.isQuery && record.body.includes(tenantId) && record.body.includes('"type":"webhook"');

/** Before the tenant's next create writes, another instance subscribes in the slot it chose; answers that slot. */
function slotTakenFirst(tenantId: string): { chosen: number } {
  const taken = { chosen: 0 };
  beforeRequest(
    embedded.store,
    (record) => isSubscribing(tenantId)(record) && ((taken.chosen = Number(/"slot":(\d+)/.exec(record.body)![1])), true),
    () => subscribedElsewhere(tenantId, taken.chosen),
  );
  return taken;
}

const retired = (secret: string, untilMs: number) => ({ secret, until: new Date(untilMs).toISOString() });

describe('createWebhook', () => {
  it('answers the subscription with its secret, and stores it with its secret, no failures and the slot it holds', async () => {
    const principal = adminCaller();
    const secret = newSecret();
    const before = Date.now();
    const { resource, replayed } = await createWebhook(
      principal.tenantId,
      principal.objectId,
      { url: 'https://receiver.example/hook', description: 'Ours' },
      secret,
      ['task.created', 'project.deleted'],
      undefined,
    );
    const after = Date.now();

    expect(replayed).toBe(false);
    expect(resource).toEqual({
      id: expect.stringMatching(/^WHK-[1-9]\d*$/),
      url: 'https://receiver.example/hook',
      events: ['task.created', 'project.deleted'],
      description: 'Ours',
      active: true,
      disabledReason: null,
      createdAt: resource.createdAt,
      updatedAt: resource.createdAt,
      secret,
    });
    expect(Object.keys(resource)).toEqual(['id', 'url', 'events', 'description', 'active', 'disabledReason', 'createdAt', 'updatedAt', 'secret']);
    expect(Date.parse(resource.createdAt)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(resource.createdAt)).toBeLessThanOrEqual(after);

    const document = (await stored(principal.tenantId, resource.id))!;
    expect(document).toMatchObject({ ...resource, tenantId: principal.tenantId, type: 'webhook', retiredSecrets: [], failedInARow: 0 });
    expect(SLOTS).toContain(document.slot);
    expect(await slotsOf(principal.tenantId)).toEqual([
      expect.objectContaining({ id: `webhook-slot-${document.slot}`, tenantId: principal.tenantId, type: 'webhookSlot', webhookId: resource.id }),
    ]);
  });

  it('gives a subscription without a description an empty one, and numbers the tenant’s subscriptions from its own sequence', async () => {
    const principal = adminCaller();
    const first = await subscribe(principal);
    const second = await subscribe(principal);
    expect(first).toMatchObject({ id: 'WHK-1001', description: '' });
    expect(second.id).toBe('WHK-1002');
    expect(await stored<{ value: number }>(principal.tenantId, 'sequence-webhooks')).toMatchObject({ type: 'sequence' });
  });

  it('answers a repeated Idempotency-Key with the first result, secret included, and makes one subscription', async () => {
    const principal = adminCaller();
    const idempotency = { key: randomUUID(), scope: 'webhooks-create' };
    const body = { url: 'https://receiver.example/hook' };
    const first = await createWebhook(principal.tenantId, principal.objectId, body, newSecret(), CHANGE_EVENT_TYPES, idempotency);
    const again = await createWebhook(principal.tenantId, principal.objectId, body, newSecret(), CHANGE_EVENT_TYPES, idempotency);

    expect(again).toEqual({ resource: first.resource, replayed: true });
    expect(await subscriptionsOf(principal.tenantId)).toHaveLength(1);
    await expect(
      createWebhook(principal.tenantId, principal.objectId, { url: 'https://other.example/hook' }, newSecret(), CHANGE_EVENT_TYPES, idempotency),
    ).rejects.toMatchObject({
      refusal: 'keyReused',
      messageKey: 'idempotencyKeyReused',
    });
  });

  it('makes at most 20 subscriptions of racing creates, each in a slot of its own, and answers the others 409 tooManyWebhooks', async () => {
    const principal = adminCaller();
    const results = await Promise.allSettled(Array.from({ length: 22 }, () => subscribe(principal)));

    const refused = results.filter((result) => result.status === 'rejected').map((result) => result.reason as unknown);
    expect(refused).toHaveLength(2);
    for (const reason of refused) {
      expect(reason).toBeInstanceOf(RuleError);
      expect(reason).toMatchObject({ refusal: 'conflict', messageKey: 'tooManyWebhooks', params: { limit: 20 } });
    }
    const subscriptions = await subscriptionsOf(principal.tenantId);
    expect(subscriptions.map((subscription) => subscription.slot).sort((a, b) => a - b)).toEqual(SLOTS);
    expect((await slotsOf(principal.tenantId)).map((slot) => slot.id).sort()).toEqual(SLOTS.map((slot) => `webhook-slot-${slot}`).sort());
  });

  it('picks a free slot at random, so that creates racing from two instances seldom pick the same', async () => {
    const principal = adminCaller();
    const slots: number[] = [];
    while (slots.length < SLOTS.length) {
      const { id } = await subscribe(principal);
      slots.push((await stored(principal.tenantId, id))!.slot);
    }
    // In the order they were made, the 20 slots are 1 to 20 once in 20! times.
    expect([...slots].sort((a, b) => a - b)).toEqual(SLOTS);
    expect(slots).not.toEqual(SLOTS);
  });

  it('picks again when another instance took its slot first, and makes no 21st when that was the last slot', async () => {
    const principal = adminCaller();
    const { tenantId } = principal;
    for (let made = 0; made < 18; made++) await subscribe(principal);

    // Another instance takes the very slot this create chose, between its check and its write.
    const taken = slotTakenFirst(tenantId);
    const picked = await subscribe(principal);
    const slot = (await stored(tenantId, picked.id))!.slot;
    expect(slot).not.toBe(taken.chosen);
    expect(await slotsOf(tenantId)).toContainEqual(expect.objectContaining({ id: `webhook-slot-${slot}`, webhookId: picked.id }));

    // The last free slot, taken the same way: 20 subscriptions, and a 409 for this one.
    slotTakenFirst(tenantId);
    await expect(subscribe(principal)).rejects.toMatchObject({ refusal: 'conflict', messageKey: 'tooManyWebhooks' });
    expect(await subscriptionsOf(tenantId)).toHaveLength(20);
    expect(await slotsOf(tenantId)).toHaveLength(20);
  });

  it('of two tenants do not wait for each other', async () => {
    const [one, other] = [adminCaller(), adminCaller()];
    const held = gate();
    beforeRequest(embedded.store, isSubscribing(one.tenantId), () => held.pass());
    const slow = subscribe(one);
    await held.reached;
    await subscribe(other);
    expect(await subscriptionsOf(one.tenantId)).toEqual([]);
    held.release();
    await slow;
    expect(await subscriptionsOf(one.tenantId)).toHaveLength(1);
  });
});

describe('getWebhook and readWebhook', () => {
  it('show the subscription without its secret or its bookkeeping; the stored document has them', async () => {
    const principal = adminCaller();
    const { secret, ...created } = await subscribe(principal);
    const shown: Webhook = await getWebhook(principal.tenantId, created.id);
    expect(shown).toEqual(created);
    expect(Object.keys(shown)).not.toContain('secret');
    expect(await readWebhook(principal.tenantId, created.id)).toMatchObject({ ...created, secret, failedInARow: 0 });
  });

  it('answer 404 webhookNotFound (no document; the id cut to 100 characters) for another tenant’s subscription, a missing one, another type’s id', async () => {
    const principal = adminCaller();
    const { id } = await subscribe(principal);
    const stranger = adminCaller();
    const { slot } = (await stored(principal.tenantId, id))!;
    for (const [tenantId, missing] of [
      [stranger.tenantId, id],
      [principal.tenantId, 'WHK-999999'],
      [principal.tenantId, `webhook-slot-${slot}`],
      [principal.tenantId, `WHK-${'9'.repeat(150)}`],
    ] as const) {
      await expect(getWebhook({ ...principal, tenantId }.tenantId, missing)).rejects.toMatchObject({
        refusal: 'notFound',
        messageKey: 'webhookNotFound',
        params: { id: missing.slice(0, 100) },
      });
      expect(await readWebhook(tenantId, missing)).toBeUndefined();
    }
  });
});

describe('allWebhooks', () => {
  it('gives every subscription of the tenant, stored documents with their secrets, and nothing else', async () => {
    const principal = adminCaller();
    const first = await subscribe(principal);
    const second = await subscribe(principal);
    await subscribe(adminCaller());
    const all = await allWebhooks(principal.tenantId);
    expect(all.map((subscription) => subscription.id).sort()).toEqual([first.id, second.id].sort());
    expect(all.find((subscription) => subscription.id === first.id)).toMatchObject({ secret: first.secret, type: 'webhook' });
  });
});

describe('listWebhooks', () => {
  it('lists the tenant’s subscriptions newest first, a page at a time, without their secrets', async () => {
    const principal = adminCaller();
    const [older, newest, oldest] = [await subscribe(principal), await subscribe(principal), await subscribe(principal)];
    await storedChange(principal.tenantId, older.id, { createdAt: '2026-01-02T00:00:00.000Z' });
    await storedChange(principal.tenantId, newest.id, { createdAt: '2026-01-03T00:00:00.000Z' });
    await storedChange(principal.tenantId, oldest.id, { createdAt: '2026-01-01T00:00:00.000Z' });
    await subscribe(adminCaller());

    const first = await listWebhooks(principal.tenantId, { limit: 2, cursor: undefined });
    expect(first.items.map((item) => item.id)).toEqual([newest.id, older.id]);
    expect(first.items[0]).toEqual({ ...(await getWebhook(principal.tenantId, newest.id)) });
    expect(Object.keys(first.items[0]!)).not.toContain('secret');
    expect(first.nextCursor).toEqual(expect.any(String));

    const second = await listWebhooks(principal.tenantId, { limit: 2, cursor: first.nextCursor });
    expect(second).toEqual({ items: [await getWebhook(principal.tenantId, oldest.id)], nextCursor: undefined });
  });

  it('refuses a cursor of another tenant’s list', async () => {
    const [principal, stranger] = [adminCaller(), adminCaller()];
    await subscribe(principal);
    await subscribe(principal);
    const { nextCursor } = await listWebhooks(principal.tenantId, { limit: 1, cursor: undefined });
    await expect(listWebhooks(stranger.tenantId, { limit: 1, cursor: nextCursor })).rejects.toMatchObject({
      refusal: 'invalid',
      messageKey: 'cursorForOtherQuery',
    });
  });
});

describe('updateWebhook', () => {
  it('changes the fields given, keeps the others, and answers the subscription without its secret', async () => {
    const principal = adminCaller();
    const created = await subscribe(principal);
    await storedChange(principal.tenantId, created.id, { updatedAt: '2026-01-01T00:00:00.000Z' });
    const before = Date.now();
    const updated = await updateWebhook(principal.tenantId, created.id, { url: 'https://moved.example/hook', events: ['task.deleted'] }, undefined);

    const { secret, ...unchanged } = created;
    expect(updated).toEqual({ ...unchanged, url: 'https://moved.example/hook', events: ['task.deleted'], updatedAt: updated.updatedAt });
    expect(Date.parse(updated.updatedAt)).toBeGreaterThanOrEqual(before);
    expect(await stored(principal.tenantId, created.id)).toMatchObject({ ...updated, secret });
  });

  it('switches a subscription the API turned off on again, and forgets why it went off and its failures', async () => {
    const principal = adminCaller();
    const { id } = await subscribe(principal);
    const failedDeliveryIds = ['dlv_1', 'dlv_2', 'dlv_3'];
    await storedChange(principal.tenantId, id, { active: false, disabledReason: DISABLED_BECAUSE.failing, failedInARow: 3, failedDeliveryIds });

    expect(await updateWebhook(principal.tenantId, id, { active: true }, undefined)).toMatchObject({ active: true, disabledReason: null });
    expect(await stored(principal.tenantId, id)).toMatchObject({ active: true, disabledReason: null, failedInARow: 0, failedDeliveryIds: [] });
  });

  it('keeps why a subscription went off, and its failures, through a change that does not switch it', async () => {
    const principal = adminCaller();
    const { id } = await subscribe(principal);
    await storedChange(principal.tenantId, id, { active: false, disabledReason: DISABLED_BECAUSE.gone, failedInARow: 1 });

    expect(await updateWebhook(principal.tenantId, id, { description: 'Renamed' }, undefined)).toMatchObject({
      active: false,
      disabledReason: DISABLED_BECAUSE.gone,
      description: 'Renamed',
    });
    expect(await stored(principal.tenantId, id)).toMatchObject({ failedInARow: 1 });
  });

  it('writes nothing for a change to what is stored: the subscription, its updatedAt and its version stay as they were', async () => {
    const principal = adminCaller();
    const created = await subscribe(principal);
    await storedChange(principal.tenantId, created.id, { updatedAt: '2026-01-01T00:00:00.000Z', description: 'Ours', failedInARow: 2 });
    const before = (await stored(principal.tenantId, created.id))!;
    const read = await getWebhook(principal.tenantId, created.id);
    const from = embedded.store.requests.length;

    const same = { url: before.url, events: ['project.created' as const], description: 'Ours', active: true };
    for (const changes of [same, { active: true }, { events: ['project.created' as const] }]) {
      const answered = await updateWebhook(principal.tenantId, created.id, changes, [versionOf(read)]);
      expect(answered, JSON.stringify(changes)).toEqual(read);
    }
    expect(writesIn(embedded.store.requests.slice(from))).toEqual([]);
    // Switched on already: its failures in a row keep counting.
    expect(await stored(principal.tenantId, created.id)).toEqual(before);
  });

  it('keeps a subscription the API turned off as it is when told it is off: its reason and its failures stay, nothing is written', async () => {
    const principal = adminCaller();
    const { id } = await subscribe(principal);
    const off = await storedChange(principal.tenantId, id, { active: false, disabledReason: DISABLED_BECAUSE.gone, failedInARow: 1 });

    expect(await updateWebhook(principal.tenantId, id, { active: false }, undefined)).toMatchObject({ active: false, disabledReason: DISABLED_BECAUSE.gone });
    expect(await stored(principal.tenantId, id)).toEqual(off);
  });

  it('switching a subscription that is on off forgets its failures in a row', async () => {
    const principal = adminCaller();
    const { id } = await subscribe(principal);
    await storedChange(principal.tenantId, id, { failedInARow: 2 });

    expect(await updateWebhook(principal.tenantId, id, { active: false }, undefined)).toMatchObject({ active: false, disabledReason: null });
    expect(await stored(principal.tenantId, id)).toMatchObject({ active: false, failedInARow: 0 });
  });

  it('honours If-Match: the version read changes it, a stale one is a 412 that changes nothing', async () => {
    const principal = adminCaller();
    const { id } = await subscribe(principal);
    const read = await getWebhook(principal.tenantId, id);
    const changed = await updateWebhook(principal.tenantId, id, { description: 'First' }, [versionOf(read)]);
    expect(changed.description).toBe('First');

    await expect(updateWebhook(principal.tenantId, id, { description: 'Second' }, [versionOf(read)])).rejects.toMatchObject({
      refusal: 'stale',
      messageKey: 'preconditionFailed',
    });
    expect(await getWebhook(principal.tenantId, id)).toEqual(changed);
  });

  it('answers 404 for another tenant’s subscription and a missing one, and changes nothing', async () => {
    const principal = adminCaller();
    const { id } = await subscribe(principal);
    const before = (await stored(principal.tenantId, id))!;
    await expect(updateWebhook(adminCaller().tenantId, id, { active: false }, undefined)).rejects.toMatchObject({
      refusal: 'notFound',
      messageKey: 'webhookNotFound',
    });
    await expect(updateWebhook(principal.tenantId, 'WHK-999999', { active: false }, undefined)).rejects.toMatchObject({
      refusal: 'notFound',
      messageKey: 'webhookNotFound',
    });
    expect((await stored(principal.tenantId, id))!._etag).toBe(before._etag);
  });
});

describe('deleteWebhook', () => {
  it('removes the subscription and frees its slot in the same batch: a tenant at 20 can subscribe again, in that slot', async () => {
    const principal = adminCaller();
    const { tenantId } = principal;
    await Promise.all(SLOTS.map(() => subscribe(principal)));
    const [gone] = await subscriptionsOf(tenantId);
    const from = embedded.store.requests.length;

    await deleteWebhook(principal.tenantId, gone!.id, undefined);

    expect(writesIn(embedded.store.requests.slice(from))).toHaveLength(1);
    expect(await stored(tenantId, gone!.id)).toBeUndefined();
    expect(await stored(tenantId, `webhook-slot-${gone!.slot}`)).toBeUndefined();
    const again = await subscribe(principal);
    expect((await stored(tenantId, again.id))!.slot).toBe(gone!.slot);
    expect(await subscriptionsOf(tenantId)).toHaveLength(20);
  });

  it('keeps the subscription and its slot when the batch fails', async () => {
    const principal = adminCaller();
    const { id } = await subscribe(principal);
    embedded.store.intercept = (record) => (isBatchOf(principal.tenantId)(record) ? STORE_FAILURE : undefined);
    await expect(deleteWebhook(principal.tenantId, id, undefined)).rejects.toBeInstanceOf(DependencyUnavailableError);
    embedded.store.intercept = undefined;
    expect(await stored(principal.tenantId, id)).toBeDefined();
    expect(await slotsOf(principal.tenantId)).toHaveLength(1);
  });

  it('honours If-Match: a stale version is a 412 that leaves the subscription and its slot; the current one deletes', async () => {
    const principal = adminCaller();
    const { id } = await subscribe(principal);
    const read = await getWebhook(principal.tenantId, id);
    await updateWebhook(principal.tenantId, id, { description: 'Changed' }, undefined);

    await expect(deleteWebhook(principal.tenantId, id, [versionOf(read)])).rejects.toMatchObject({ refusal: 'stale', messageKey: 'preconditionFailed' });
    expect(await stored(principal.tenantId, id)).toBeDefined();
    expect(await slotsOf(principal.tenantId)).toHaveLength(1);

    await deleteWebhook(principal.tenantId, id, [versionOf(await getWebhook(principal.tenantId, id))]);
    expect(await subscriptionsOf(principal.tenantId)).toEqual([]);
    expect(await slotsOf(principal.tenantId)).toEqual([]);
  });

  it('answers 404 for another tenant’s subscription and a missing one, and deletes nothing', async () => {
    const principal = adminCaller();
    const { id } = await subscribe(principal);
    await expect(deleteWebhook(adminCaller().tenantId, id, undefined)).rejects.toMatchObject({ refusal: 'notFound', messageKey: 'webhookNotFound' });
    await expect(deleteWebhook(principal.tenantId, 'WHK-999999', undefined)).rejects.toMatchObject({ refusal: 'notFound', messageKey: 'webhookNotFound' });
    expect(await subscriptionsOf(principal.tenantId)).toHaveLength(1);
    expect(await slotsOf(principal.tenantId)).toHaveLength(1);
  });
});

describe('rotateSecret', () => {
  it('answers the new secret; the one it replaced keeps signing beside it for 24 hours', async () => {
    const principal = adminCaller();
    const created = await subscribe(principal);
    const secret = newSecret();
    const before = Date.now();
    const rotated = await rotateSecret(principal.tenantId, created.id, secret);
    const after = Date.now();

    expect(Object.keys(rotated)).toEqual(Object.keys(created));
    expect(rotated).toEqual({ ...created, secret, updatedAt: rotated.updatedAt });
    const document = (await stored(principal.tenantId, created.id))!;
    expect(document).toMatchObject({ secret, updatedAt: rotated.updatedAt });
    expect(document).not.toHaveProperty('previousSecret');
    expect(document.retiredSecrets).toEqual([{ secret: created.secret, until: expect.any(String) }]);
    const until = Date.parse(document.retiredSecrets[0]!.until);
    expect(until - Date.parse(rotated.updatedAt)).toBe(DAY_MS);
    expect(Date.parse(rotated.updatedAt)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(rotated.updatedAt)).toBeLessThanOrEqual(after);

    expect(signingSecrets(document)).toEqual([secret, created.secret]);
    expect(signingSecrets(document, until - 1)).toEqual([secret, created.secret]);
    expect(signingSecrets(document, until)).toEqual([secret]);
  });

  it('keeps every secret of the last day signing, newest first, however many rotations follow', async () => {
    const principal = adminCaller();
    const created = await subscribe(principal);
    const secrets = [created.secret];
    for (let rotation = 0; rotation < 4; rotation++) secrets.unshift((await rotateSecret(principal.tenantId, created.id, newSecret())).secret);
    expect(signingSecrets((await readWebhook(principal.tenantId, created.id))!)).toEqual(secrets);
  });

  it('loses no secret to rotations at the same time in this instance', async () => {
    const principal = adminCaller();
    const created = await subscribe(principal);
    const rotated = await Promise.all(Array.from({ length: 5 }, () => rotateSecret(principal.tenantId, created.id, newSecret())));
    const signing = signingSecrets((await readWebhook(principal.tenantId, created.id))!);
    expect(signing).toHaveLength(6);
    expect(new Set(signing)).toEqual(new Set([created.secret, ...rotated.map(({ secret }) => secret)]));
  });

  it('loses no secret to a rotation another instance wrote between its read and its write', async () => {
    const principal = adminCaller();
    const created = await subscribe(principal);
    const theirs = newSecret();
    beforeRequest(embedded.store, isBatchOf(principal.tenantId), async () => {
      await storedChange(principal.tenantId, created.id, { secret: theirs, retiredSecrets: [retired(created.secret, Date.now() + DAY_MS)] });
    });
    const mine = await rotateSecret(principal.tenantId, created.id, newSecret());
    expect(signingSecrets((await readWebhook(principal.tenantId, created.id))!)).toEqual([mine.secret, theirs, created.secret]);
  });

  it('drops the replaced secrets whose day is over; they no longer sign', async () => {
    const principal = adminCaller();
    const created = await subscribe(principal);
    const [stale, live] = [newSecret(), newSecret()];
    const document = await storedChange(principal.tenantId, created.id, {
      retiredSecrets: [retired(live, Date.now() + 60_000), retired(stale, Date.now() - 1)],
    });
    expect(signingSecrets(document)).toEqual([created.secret, live]);

    const rotated = await rotateSecret(principal.tenantId, created.id, newSecret());
    const after = (await stored(principal.tenantId, created.id))!;
    expect(after.retiredSecrets.map(({ secret }) => secret)).toEqual([created.secret, live]);
    expect(signingSecrets(after)).toEqual([rotated.secret, created.secret, live]);
  });

  it('allows 50 secrets signing at once; a rotation that would make a 51st is a 409 tooManySigningSecrets that changes nothing', async () => {
    const principal = adminCaller();
    const created = await subscribe(principal);
    const soon = Date.now() + 60_000;
    const stillSigning = Array.from({ length: 48 }, () => retired(newSecret(), soon));
    // Those whose day is over do not count.
    await storedChange(principal.tenantId, created.id, { retiredSecrets: [...stillSigning, retired(newSecret(), Date.now() - 1)] });

    const fiftieth = await rotateSecret(principal.tenantId, created.id, newSecret());
    const full = (await stored(principal.tenantId, created.id))!;
    expect(signingSecrets(full)).toHaveLength(50);
    expect(signingSecrets(full)[0]).toBe(fiftieth.secret);

    const refused = rotateSecret(principal.tenantId, created.id, newSecret());
    await expect(refused).rejects.toBeInstanceOf(RuleError);
    await expect(refused).rejects.toMatchObject({ refusal: 'conflict', messageKey: 'tooManySigningSecrets', params: { limit: 50 } });
    expect((await stored(principal.tenantId, created.id))!._etag).toBe(full._etag);
  });

  it('answers 404 for another tenant’s subscription and a missing one', async () => {
    const principal = adminCaller();
    const { id, secret } = await subscribe(principal);
    await expect(rotateSecret(adminCaller().tenantId, id, newSecret())).rejects.toMatchObject({ refusal: 'notFound', messageKey: 'webhookNotFound' });
    await expect(rotateSecret(principal.tenantId, 'WHK-999999', newSecret())).rejects.toMatchObject({ refusal: 'notFound', messageKey: 'webhookNotFound' });
    expect((await stored(principal.tenantId, id))!.secret).toBe(secret);
  });
});

describe('recordDeliveryEnd', () => {
  const succeeded = { status: 'Succeeded', nextAttemptAt: null, gone: false } as const;
  const failed = { status: 'Failed', nextAttemptAt: null, gone: false } as const;

  async function subscription(principal = adminCaller()): Promise<WebhookDocument> {
    const { id } = await subscribe(principal);
    return storedChange(principal.tenantId, id, { updatedAt: '2026-01-01T00:00:00.000Z' });
  }

  it('writes nothing for a success after successes', async () => {
    const webhook = await subscription();
    const from = embedded.store.requests.length;
    await recordDeliveryEnd(webhook, 'dlv_1', succeeded);
    expect(writesIn(embedded.store.requests.slice(from))).toEqual([]);
    expect((await stored(webhook.tenantId, webhook.id))!._etag).toBe(webhook._etag);
  });

  it('clears the failures after a success, and leaves the subscription on', async () => {
    const webhook = await subscription();
    const failing = await storedChange(webhook.tenantId, webhook.id, { failedInARow: 2 });
    await recordDeliveryEnd(failing, 'dlv_2', succeeded);
    expect(await stored(webhook.tenantId, webhook.id)).toMatchObject({ failedInARow: 0, active: true, disabledReason: null, updatedAt: failing.updatedAt });
  });

  it('clears the failures after a success even when the subscription was read before a failure was counted', async () => {
    // An attempt reads its subscription before it is sent: another delivery may end Failed while it is under way.
    const webhook = await subscription();
    await recordDeliveryEnd(webhook, 'dlv_failed', failed);
    await recordDeliveryEnd(webhook, 'dlv_succeeded', succeeded);
    expect(await stored(webhook.tenantId, webhook.id)).toMatchObject({ failedInARow: 0, failedDeliveryIds: [], active: true });
  });

  it('counts failures in a row, and turns the subscription off, saying why, at the third', async () => {
    const webhook = await subscription();
    await recordDeliveryEnd(webhook, 'dlv_3', failed);
    await recordDeliveryEnd(webhook, 'dlv_4', failed);
    // Counted on the subscription as stored, not as the caller last read it.
    expect(await stored(webhook.tenantId, webhook.id)).toMatchObject({ failedInARow: 2, active: true, disabledReason: null, updatedAt: webhook.updatedAt });

    const before = Date.now();
    await recordDeliveryEnd(webhook, 'dlv_5', failed);
    const off = (await stored(webhook.tenantId, webhook.id))!;
    expect(off).toMatchObject({ failedInARow: 3, active: false, disabledReason: DISABLED_BECAUSE.failing });
    expect(Date.parse(off.updatedAt)).toBeGreaterThanOrEqual(before);
  });

  it('records nothing, and does not fail, for a subscription deleted meanwhile', async () => {
    const principal = adminCaller();
    const webhook = await subscription(principal);
    await deleteWebhook(principal.tenantId, webhook.id, undefined);
    await expect(recordDeliveryEnd(webhook, 'dlv_8', failed)).resolves.toBeUndefined();
    expect(await stored(webhook.tenantId, webhook.id)).toBeUndefined();
  });

  it('fails when the store does, or when the write stays contended', async () => {
    const webhook = await subscription();
    embedded.store.intercept = (record) => (isBatchOf(webhook.tenantId)(record) ? STORE_FAILURE : undefined);
    await expect(recordDeliveryEnd(webhook, 'dlv_9', failed)).rejects.toBeInstanceOf(DependencyUnavailableError);

    // Another instance changes the subscription before each of this one's writes.
    embedded.store.intercept = async (record) => {
      if (isBatchOf(webhook.tenantId)(record))
        await embedded
          .direct()
          .item(webhook.id, webhook.tenantId)
          .patch([{ op: 'set', path: '/description', value: randomUUID() }]);
      return undefined;
    };
    await expect(recordDeliveryEnd(webhook, 'dlv_10', failed)).rejects.toMatchObject({ refusal: 'contended', messageKey: 'changeContended' });
    embedded.store.intercept = undefined;
    expect(await stored(webhook.tenantId, webhook.id)).toMatchObject({ failedInARow: 0 });
  });
});
