/**
 * Recorded users (shared/data/users-repository.ts), in process, against the embedded Cosmos store of
 * the local stack started by this file: a caller recorded on first use and refreshed at most every
 * 15 minutes (at once when the token shows something new), a first call racing another instance's,
 * the caller's own record, and the tenant's list by name with its filters and cursor. The app
 * reaches the store through a proxy (test/support/cosmos-proxy.ts) that counts its writes and can
 * fail one or hold it while another instance, which goes to the store directly, writes first.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../shared/auth/principal.js';
import { getCurrentUser, listRecordedUsers, recordCaller } from '../../../shared/data/users-repository.js';
import type { Role } from '../../../shared/roles.js';
import { listUsersQuery, type User } from '../../../shared/schemas/users.js';
import { beforeRequest, type CosmosRequestRecord, STORE_FAILURE, writesIn } from '../../support/cosmos-proxy.js';
import { embeddedStoreForTests } from '../../support/embedded-store.js';

const embedded = embeddedStoreForTests();

const MINUTE_MS = 60_000;
const START = Date.parse('2027-03-01T09:00:00.000Z');
const at = (minutes: number) => START + minutes * MINUTE_MS;
const iso = (minutes: number) => new Date(at(minutes)).toISOString();

function caller(overrides: Partial<Principal> = {}): Principal {
  return {
    tenantId: randomUUID(),
    objectId: randomUUID(),
    kind: 'user',
    roles: ['LMS.Reader'],
    email: 'kim@contoso.test',
    displayName: 'Kim Lee',
    accessToken: 'unused',
    ...overrides,
  };
}

async function stored(principal: Principal): Promise<Record<string, unknown> | undefined> {
  const { resource } = await embedded.direct().item(principal.objectId, principal.tenantId).read<Record<string, unknown>>();
  return resource;
}

/** The writes `work` sent to the store through the proxy. */
async function writesOf(work: () => Promise<unknown>): Promise<CosmosRequestRecord[]> {
  const before = embedded.store.requests.length;
  await work();
  return writesIn(embedded.store.requests.slice(before));
}

const isCreate = (record: CosmosRequestRecord) => record.method === 'POST' && !record.isQuery && record.path.endsWith('/docs') && record.body.startsWith('{');
const isPatch = (record: CosmosRequestRecord) => record.method === 'PATCH';

const list = (principal: Principal, query: Record<string, string> = {}) => listRecordedUsers(principal.tenantId, listUsersQuery.parse(query));

describe('recording a caller', () => {
  it('records a user on first use: the object id as the id, the token as shown, first and last seen now', async () => {
    const kim = caller({ roles: ['LMS.Member', 'LMS.Reader'] });
    await recordCaller(kim.tenantId, kim, at(0));
    const document = await stored(kim);
    expect(document).toMatchObject({
      id: kim.objectId,
      tenantId: kim.tenantId,
      type: 'user',
      email: 'kim@contoso.test',
      displayName: 'Kim Lee',
      nameSort: 'kim lee',
      roles: ['LMS.Member', 'LMS.Reader'],
      createdAt: iso(0),
      lastSeenAt: iso(0),
    });
    expect(await getCurrentUser(kim.tenantId, kim.objectId)).toEqual({
      id: kim.objectId,
      email: 'kim@contoso.test',
      displayName: 'Kim Lee',
      roles: ['LMS.Member', 'LMS.Reader'],
      createdAt: iso(0),
      lastSeenAt: iso(0),
    });
  });

  it('records a user whose token shows no e-mail or name with nulls, sorted first', async () => {
    const nameless = caller({ email: undefined, displayName: undefined });
    await recordCaller(nameless.tenantId, nameless, at(0));
    expect(await stored(nameless)).toMatchObject({ email: null, displayName: null, nameSort: '' });
    await recordCaller(nameless.tenantId, caller({ tenantId: nameless.tenantId, displayName: 'Aaron' }), at(0));
    expect((await list(nameless)).items.map((user) => user.displayName)).toEqual([null, 'Aaron']);
  });

  it('writes nothing again within 15 minutes, and refreshes when they are up, keeping when the user was first seen', async () => {
    const kim = caller();
    expect(await writesOf(() => recordCaller(kim.tenantId, kim, at(0)))).toHaveLength(2);
    expect(await writesOf(() => recordCaller(kim.tenantId, kim, at(14.99)))).toEqual([]);
    expect(await writesOf(() => recordCaller(kim.tenantId, kim, at(15)))).toHaveLength(1);
    expect(await getCurrentUser(kim.tenantId, kim.objectId)).toMatchObject({ createdAt: iso(0), lastSeenAt: iso(15) });
    // The 15 minutes count from the last write, not from the first.
    expect(await writesOf(() => recordCaller(kim.tenantId, kim, at(29)))).toEqual([]);
    await recordCaller(kim.tenantId, kim, at(30));
    expect(await getCurrentUser(kim.tenantId, kim.objectId)).toMatchObject({ createdAt: iso(0), lastSeenAt: iso(30) });
  });

  it.each<[string, Partial<Principal>]>([
    ['e-mail', { email: 'kim.lee@contoso.test' }],
    ['name', { displayName: 'Kim Lee-Park' }],
    ['set of roles', { roles: ['LMS.Admin'] }],
  ])('refreshes at once when the token shows a new %s', async (_, change) => {
    const kim = caller();
    await recordCaller(kim.tenantId, kim, at(0));
    const changed = { ...kim, ...change };
    expect(await writesOf(() => recordCaller(changed.tenantId, changed, at(1)))).toHaveLength(1);
    const { email, displayName, roles } = changed;
    expect(await getCurrentUser(kim.tenantId, kim.objectId)).toMatchObject({ email: email ?? null, displayName, roles, createdAt: iso(0), lastSeenAt: iso(1) });
    expect(await stored(kim)).toMatchObject({ nameSort: displayName!.toLowerCase() });
    // The new record is the known one now: the same token again costs nothing.
    expect(await writesOf(() => recordCaller(changed.tenantId, changed, at(2)))).toEqual([]);
  });

  it('keeps what it remembers per tenant and user: the same object id in another tenant is another user', async () => {
    const kim = caller();
    await recordCaller(kim.tenantId, kim, at(0));
    const elsewhere = { ...kim, tenantId: randomUUID() };
    expect(await writesOf(() => recordCaller(elsewhere.tenantId, elsewhere, at(1)))).toHaveLength(2);
    expect(await getCurrentUser(elsewhere.tenantId, elsewhere.objectId)).toMatchObject({ createdAt: iso(1) });
    expect(await getCurrentUser(kim.tenantId, kim.objectId)).toMatchObject({ createdAt: iso(0) });
  });

  it('never records an app-only caller, nor asks the store anything', async () => {
    const app = caller({ kind: 'app', email: undefined, displayName: undefined });
    const before = embedded.store.requests.length;
    await recordCaller(app.tenantId, app, at(0));
    expect(embedded.store.requests.length).toBe(before);
    expect(await stored(app)).toBeUndefined();
  });

  it("refreshes a record another instance made: its first sighting stands, this caller's token is written", async () => {
    const kim = caller();
    const earlier = '2026-01-01T00:00:00.000Z';
    const theirs = { id: kim.objectId, tenantId: kim.tenantId, type: 'user', email: 'old@contoso.test', displayName: 'Old', nameSort: 'old', roles: [] };
    await embedded.direct().items.create({ ...theirs, createdAt: earlier, lastSeenAt: earlier });
    const writes = await writesOf(() => recordCaller(kim.tenantId, kim, at(0)));
    expect(writes.map((write) => write.method)).toEqual(['PATCH']);
    expect(await getCurrentUser(kim.tenantId, kim.objectId)).toEqual({
      id: kim.objectId,
      email: 'kim@contoso.test',
      displayName: 'Kim Lee',
      roles: ['LMS.Reader'],
      createdAt: earlier,
      lastSeenAt: iso(0),
    });
  });

  it("writes its token over another instance's record of the same first call when both create it at once: theirs was first seen first", async () => {
    // Their call carried other roles (the user's roles changed between the two tokens): dropping this call's write would leave
    // their roles stored while this process remembers its own as recorded, and writes nothing for 15 minutes.
    const kim = caller({ roles: ['LMS.Manager'] });
    const theirs = { id: kim.objectId, tenantId: kim.tenantId, type: 'user', email: 'kim@contoso.test', displayName: 'Kim Lee', nameSort: 'kim lee' };
    beforeRequest(embedded.store, isCreate, async () => {
      await embedded.direct().items.create({ ...theirs, roles: ['LMS.Reader'], createdAt: iso(-1), lastSeenAt: iso(-1) });
    });
    await recordCaller(kim.tenantId, kim, at(0));
    expect(await getCurrentUser(kim.tenantId, kim.objectId)).toMatchObject({ roles: ['LMS.Manager'], createdAt: iso(-1), lastSeenAt: iso(0) });
    // What it remembers is what it wrote: nothing is written again within the 15 minutes.
    expect(await writesOf(() => recordCaller(kim.tenantId, kim, at(1)))).toEqual([]);
  });

  it.each([
    ['the refresh', isPatch],
    ['the first record', isCreate],
  ])('fails when the store fails %s, and remembers nothing: the next request writes', async (_, isWrite) => {
    const kim = caller();
    embedded.store.intercept = (record) => (isWrite(record) ? STORE_FAILURE : undefined);
    await expect(recordCaller(kim.tenantId, kim, at(0))).rejects.toMatchObject({ code: 500 });
    expect(await stored(kim)).toBeUndefined();
    embedded.store.intercept = undefined;
    // Within the 15 minutes: only a caller not remembered as recorded is written.
    expect(await writesOf(() => recordCaller(kim.tenantId, kim, at(1)))).toHaveLength(2);
    expect(await getCurrentUser(kim.tenantId, kim.objectId)).toMatchObject({ createdAt: iso(1) });
  });
});

describe("the caller's own record", () => {
  it('is a 404 for a user never recorded, and for the same object id recorded in another tenant', async () => {
    const kim = caller();
    await expect(getCurrentUser(kim.tenantId, kim.objectId)).rejects.toMatchObject({
      refusal: 'notFound',
      messageKey: 'userNotFound',
      params: { id: kim.objectId },
    });
    await recordCaller(randomUUID(), kim, at(0));
    await expect(getCurrentUser(kim.tenantId, kim.objectId)).rejects.toMatchObject({ refusal: 'notFound', messageKey: 'userNotFound' });
  });
});

describe("the tenant's recorded users", () => {
  /** A tenant whose users called in this order; their names sort otherwise. */
  async function tenantOf(people: [displayName: string, email: string, roles: Role[]][]) {
    const tenantId = randomUUID();
    for (const [displayName, email, roles] of people) await recordCaller(tenantId, caller({ tenantId, displayName, email, roles }), at(0));
    return caller({ tenantId });
  }
  const names = (page: { items: User[] }) => page.items.map((user) => user.displayName);

  it('lists them by name, whatever its case, of the caller’s tenant only, each as the API shows a user', async () => {
    const reader = await tenantOf([
      ['charlie Brown', 'cb@contoso.test', ['LMS.Reader']],
      ['Alice Smith', 'as@contoso.test', ['LMS.Admin']],
      ['bob Jones', 'bj@contoso.test', ['LMS.Member']],
    ]);
    await tenantOf([['Aaron Other', 'ao@fabrikam.test', ['LMS.Admin']]]);
    const page = await list(reader);
    expect(names(page)).toEqual(['Alice Smith', 'bob Jones', 'charlie Brown']);
    expect(page.nextCursor).toBeUndefined();
    expect(Object.keys(page.items[0]!).sort()).toEqual(['createdAt', 'displayName', 'email', 'id', 'lastSeenAt', 'roles']);
  });

  it('filters by a prefix of the name or of the e-mail, in any case, and by role', async () => {
    const reader = await tenantOf([
      ['Alice Smith', 'alice@contoso.test', ['LMS.Admin']],
      ['Bob Jones', 'al.bob@contoso.test', ['LMS.Member']],
      ['Carol Alder', 'carol@contoso.test', ['LMS.Member', 'LMS.Reader']],
    ]);
    expect(names(await list(reader, { q: 'AL' }))).toEqual(['Alice Smith', 'Bob Jones']);
    expect(names(await list(reader, { q: 'bob' }))).toEqual(['Bob Jones']);
    // A prefix, not a substring: "Carol Alder" has "al" inside only.
    expect(names(await list(reader, { q: 'alder' }))).toEqual([]);
    expect(names(await list(reader, { role: 'LMS.Member' }))).toEqual(['Bob Jones', 'Carol Alder']);
    expect(names(await list(reader, { q: 'al', role: 'LMS.Member' }))).toEqual(['Bob Jones']);
    expect(names(await list(reader, { role: 'LMS.Manager' }))).toEqual([]);
  });

  it('stores a name NFC-normalised, so that a search finds it however either was typed', async () => {
    const reader = await tenantOf([['Jose\u0301 Ruiz', 'jr@contoso.test', ['LMS.Reader']]]);
    expect(names(await list(reader))).toEqual(['Jos\u00e9 Ruiz']);
    for (const q of ['jos\u00e9', 'JOSE\u0301 r']) expect(names(await list(reader, { q })), q).toEqual(['Jos\u00e9 Ruiz']);
  });

  it('pages with the limit and a cursor bound to its filters', async () => {
    const reader = await tenantOf(
      ['Eve', 'Dan', 'Cid', 'Bea', 'Ann'].map((name): [string, string, Role[]] => [name, `${name.toLowerCase()}@contoso.test`, ['LMS.Reader']]),
    );
    const first = await list(reader, { limit: '2' });
    expect(names(first)).toEqual(['Ann', 'Bea']);
    const second = await list(reader, { limit: '2', cursor: first.nextCursor! });
    expect(names(second)).toEqual(['Cid', 'Dan']);
    const last = await list(reader, { limit: '2', cursor: second.nextCursor! });
    expect(names(last)).toEqual(['Eve']);
    expect(last.nextCursor).toBeUndefined();
    await expect(list(reader, { limit: '2', q: 'a', cursor: first.nextCursor! })).rejects.toMatchObject({
      refusal: 'invalid',
      messageKey: 'cursorForOtherQuery',
    });
    await expect(list(reader, { limit: '2', role: 'LMS.Reader', cursor: first.nextCursor! })).rejects.toMatchObject({
      refusal: 'invalid',
      messageKey: 'cursorForOtherQuery',
    });
    await expect(list(caller(), { limit: '2', cursor: first.nextCursor! })).rejects.toMatchObject({ refusal: 'invalid', messageKey: 'cursorForOtherQuery' });
  });
});
