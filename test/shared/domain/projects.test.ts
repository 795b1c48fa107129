import { describe, expect, it } from 'vitest';
import { assertStatusMove, assertWritable, changed, INITIAL_STATUS, membersWithOwner, ownerOf, STATUS_MOVES } from '../../../shared/domain/projects.js';
import { PROJECT_STATUSES } from '../../../shared/schemas/projects.js';

describe('project status moves', () => {
  it('start a new project Active', () => {
    expect(INITIAL_STATUS).toBe('Active');
  });

  it('name the allowed moves in a refused one, and "-" when there are none', () => {
    expect(() => assertStatusMove('Planning', 'OnHold')).toThrow(
      expect.objectContaining({
        refusal: 'conflict',
        messageKey: 'statusMoveNotAllowed',
        params: { from: 'Planning', to: 'OnHold', allowed: 'Active, Archived' },
      }),
    );
    expect(() => assertStatusMove('Archived', 'Active')).toThrow(expect.objectContaining({ params: { from: 'Archived', to: 'Active', allowed: '-' } }));
  });

  const allowed = new Set(Object.entries(STATUS_MOVES).flatMap(([from, targets]) => targets.map((to) => `${from}->${to}`)));

  it('allows exactly the contract moves', () => {
    expect([...allowed].sort()).toEqual(
      [
        'Planning->Active',
        'Planning->Archived',
        'Active->OnHold',
        'Active->Completed',
        'Active->Archived',
        'OnHold->Active',
        'OnHold->Archived',
        'Completed->Active',
        'Completed->Archived',
      ].sort(),
    );
  });

  for (const from of PROJECT_STATUSES) {
    for (const to of PROJECT_STATUSES) {
      const expected = from === to || allowed.has(`${from}->${to}`);
      it(`${from} → ${to} is ${expected ? 'allowed' : 'a conflict'}`, () => {
        if (expected) expect(() => assertStatusMove(from, to)).not.toThrow();
        else expect(() => assertStatusMove(from, to)).toThrow(expect.objectContaining({ refusal: 'conflict' }));
      });
    }
  }
});

describe('members', () => {
  it('puts the owner first and removes duplicates', () => {
    expect(membersWithOwner('o@x.test', ['a@x.test', 'o@x.test', 'a@x.test'])).toEqual(['o@x.test', 'a@x.test']);
  });

  it('counts the owner against the limit of 500, naming it', () => {
    const members = Array.from({ length: 500 }, (_, index) => `m${index}@x.test`);
    expect(() => membersWithOwner('o@x.test', members)).toThrow(
      expect.objectContaining({ refusal: 'invalid', messageKey: 'tooManyMembers', params: { limit: 500 } }),
    );
    expect(membersWithOwner('m0@x.test', members)).toHaveLength(500);
    expect(membersWithOwner('o@x.test', members.slice(1))).toHaveLength(500);
  });
});

describe('archived projects', () => {
  it('are read-only: a change is a conflict naming the project', () => {
    expect(() => assertWritable({ id: 'PRJ-7', status: 'Archived' })).toThrow(
      expect.objectContaining({ refusal: 'conflict', messageKey: 'projectArchived', params: { id: 'PRJ-7' } }),
    );
    for (const status of PROJECT_STATUSES.filter((status) => status !== 'Archived')) expect(() => assertWritable({ id: 'PRJ-1', status })).not.toThrow();
  });
});

describe('owners', () => {
  it('are the one given, or else the caller, who must then have an e-mail', () => {
    expect(ownerOf('given@x.test', 'caller@x.test')).toBe('given@x.test');
    expect(ownerOf(undefined, 'caller@x.test')).toBe('caller@x.test');
    // The e-mail from the token, as the rule for an e-mail in a body gives it.
    expect(ownerOf(undefined, 'Caller@X.test')).toBe('caller@x.test');
    expect(ownerOf('', 'caller@x.test')).toBe('');
    expect(() => ownerOf(undefined, undefined)).toThrow(expect.objectContaining({ refusal: 'invalid', messageKey: 'ownerRequired' }));
    expect(() => ownerOf(undefined, 'no-at-sign')).toThrow(expect.objectContaining({ refusal: 'invalid', messageKey: 'ownerRequired' }));
  });
});

describe('a change of a project', () => {
  const current = {
    ...{ id: 'PRJ-1', name: 'Apollo', nameSort: 'apollo', description: '', status: 'Active' as const, owner: 'o@x.test', members: ['o@x.test'] },
    ...{ createdAt: 'then', updatedAt: 'then', createdBy: 'someone' },
  };

  it('applies the fields given, keeps the new owner first among the members, and sorts by the new name', () => {
    expect(changed(current, { name: 'Zeus', owner: 'n@x.test', members: ['a@x.test'] }, 'now')).toEqual({
      ...current,
      name: 'Zeus',
      nameSort: 'zeus',
      owner: 'n@x.test',
      members: ['n@x.test', 'a@x.test'],
      updatedAt: 'now',
    });
  });

  it('moves the status only as the contract lists, and changes nothing of an Archived project', () => {
    expect(changed(current, { status: 'OnHold' }, 'now').status).toBe('OnHold');
    expect(() => changed(current, { status: 'Planning' }, 'now')).toThrow(expect.objectContaining({ messageKey: 'statusMoveNotAllowed' }));
    expect(() => changed({ ...current, status: 'Archived' }, { name: 'Later' }, 'now')).toThrow(expect.objectContaining({ messageKey: 'projectArchived' }));
  });
});
