/** The domain rules beyond the status moves (test/unit/projects.test.ts): refusals' details, tasks, versions and delivery outcomes. */
import { describe, expect, it } from 'vitest';
import { assertStatusMove, INITIAL_STATUS, membersWithOwner, ownerOf } from '../../shared/domain/projects.js';
import { priorityRank, TASK_DEFAULTS } from '../../shared/domain/tasks.js';
import { satisfies, versionOf } from '../../shared/domain/versions.js';
import { afterAttempt, DISABLED_BECAUSE, FAILED_DELIVERIES_TO_DISABLE } from '../../shared/domain/webhooks.js';

describe('projects', () => {
  it('start Active', () => {
    expect(INITIAL_STATUS).toBe('Active');
  });

  it('name the allowed moves in a refused one, and "-" when there are none', () => {
    expect(() => assertStatusMove('Planning', 'OnHold')).toThrow(
      expect.objectContaining({ status: 409, messageKey: 'statusMoveNotAllowed', params: { from: 'Planning', to: 'OnHold', allowed: 'Active, Archived' } }),
    );
    expect(() => assertStatusMove('Archived', 'Active')).toThrow(
      expect.objectContaining({ status: 409, params: { from: 'Archived', to: 'Active', allowed: '-' } }),
    );
    expect(() => assertStatusMove('Archived', 'Archived')).not.toThrow();
  });

  it('take the e-mail from the token as it validates it', () => {
    expect(ownerOf(undefined, 'Caller@X.test')).toBe('caller@x.test');
    expect(ownerOf('', 'caller@x.test')).toBe('');
  });

  it('refuse more members than the limit, naming it', () => {
    const members = Array.from({ length: 500 }, (_, index) => `m${index}@x.test`);
    expect(() => membersWithOwner('o@x.test', members)).toThrow(expect.objectContaining({ status: 400, messageKey: 'tooManyMembers', params: { limit: 500 } }));
    expect(membersWithOwner('o@x.test', members.slice(1))).toHaveLength(500);
  });
});

describe('an archived project', () => {
  it('refuses a change with a 409 naming it', async () => {
    const { assertWritable } = await import('../../shared/domain/projects.js');
    expect(() => assertWritable({ id: 'PRJ-7', status: 'Archived' })).toThrow(
      expect.objectContaining({ status: 409, messageKey: 'projectArchived', params: { id: 'PRJ-7' } }),
    );
  });
});

describe('tasks', () => {
  it('are Todo and Medium unless the request says otherwise', () => {
    expect(TASK_DEFAULTS).toEqual({ status: 'Todo', priority: 'Medium' });
  });

  it('rank priorities from 1 (Low) to 4 (Urgent)', () => {
    expect(['Low', 'Medium', 'High', 'Urgent'].map((priority) => priorityRank(priority as 'Low'))).toEqual([1, 2, 3, 4]);
  });
});

describe('versions', () => {
  it('are 27 characters of the SHA-256 of what is shown, base64url', () => {
    expect(versionOf({ id: 'PRJ-1' })).toBe('uvVSI86ekdMe3fqJ6A3qcG3LDxs');
    expect(versionOf({ id: 'PRJ-1' })).toMatch(/^[\w-]{27}$/);
    expect(versionOf({ id: 'PRJ-2' })).not.toBe(versionOf({ id: 'PRJ-1' }));
  });

  it('satisfy any expectation when nothing or "*" is asked, else only one of those listed', () => {
    expect(satisfies(undefined, 'a')).toBe(true);
    expect(satisfies('*', 'a')).toBe(true);
    expect(satisfies(['b', 'a'], 'a')).toBe(true);
    expect(satisfies(['b'], 'a')).toBe(false);
  });
});

describe('a delivery attempt', () => {
  const now = Date.parse('2026-03-01T12:00:00.000Z');
  const schedule = [1_000, 2_000];

  it('succeeds on every 2xx and on nothing else', () => {
    for (const status of [200, 201, 204, 299])
      expect(afterAttempt(1, status, schedule, now)).toEqual({ status: 'Succeeded', nextAttemptAt: null, gone: false });
    for (const status of [199, 300, 301, 404, 500]) expect(afterAttempt(1, status, schedule, now).status).toBe('Pending');
  });

  it('ends the delivery and its subscription on a 410', () => {
    expect(afterAttempt(1, 410, schedule, now)).toEqual({ status: 'Failed', nextAttemptAt: null, gone: true });
  });

  it('fails once the schedule is used up', () => {
    expect(afterAttempt(3, 500, schedule, now)).toEqual({ status: 'Failed', nextAttemptAt: null, gone: false });
    expect(afterAttempt(3, undefined, schedule, now)).toEqual({ status: 'Failed', nextAttemptAt: null, gone: false });
  });

  it('uses the current time when none is given', () => {
    const before = Date.now();
    const after = afterAttempt(1, 500, [60_000]);
    expect(Date.parse(after.nextAttemptAt!)).toBeGreaterThanOrEqual(before + 60_000);
    expect(Date.parse(after.nextAttemptAt!)).toBeLessThanOrEqual(Date.now() + 60_000);
  });

  it('turns a subscription off after three failed deliveries, saying why', () => {
    expect(FAILED_DELIVERIES_TO_DISABLE).toBe(3);
    expect(DISABLED_BECAUSE).toEqual({ gone: 'The receiver answered 410 Gone.', failing: '3 deliveries in a row failed.' });
  });
});
