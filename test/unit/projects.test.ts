import { describe, expect, it } from 'vitest';
import { assertStatusMove, membersWithOwner, STATUS_MOVES } from '../../shared/domain/projects.js';
import { ApiError } from '../../shared/errors.js';
import { PROJECT_STATUSES } from '../../shared/schemas/projects.js';

describe('project status moves', () => {
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
      it(`${from} → ${to} is ${expected ? 'allowed' : 'a 409'}`, () => {
        if (expected) expect(() => assertStatusMove(from, to)).not.toThrow();
        else expect(() => assertStatusMove(from, to)).toThrow(expect.objectContaining({ status: 409 }));
      });
    }
  }
});

describe('members', () => {
  it('puts the owner first and removes duplicates', () => {
    expect(membersWithOwner('o@x.test', ['a@x.test', 'o@x.test', 'a@x.test'])).toEqual(['o@x.test', 'a@x.test']);
  });

  it('counts the owner against the limit of 500', () => {
    const members = Array.from({ length: 500 }, (_, index) => `m${index}@x.test`);
    expect(() => membersWithOwner('o@x.test', members)).toThrow(ApiError);
    expect(membersWithOwner('m0@x.test', members)).toHaveLength(500);
  });
});
