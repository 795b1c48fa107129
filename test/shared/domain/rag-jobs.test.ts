import { describe, expect, it } from 'vitest';
import { cancelOfFinished, endEvent, ended, heldByOther, isFinished, planningAt, standsAt } from '../../../shared/domain/rag-jobs.js';

describe('a job', () => {
  it('has ended when Succeeded, Failed or Cancelled', () => {
    expect((['Queued', 'Running', 'Succeeded', 'Failed', 'Cancelled'] as const).map((status) => isFinished({ status }))).toEqual([
      false,
      false,
      true,
      true,
      true,
    ]);
  });

  it('that has ended refuses a cancel with a conflict naming how it ended', () => {
    expect(cancelOfFinished({ id: 'job-1', status: 'Failed' })).toMatchObject({
      refusal: 'conflict',
      messageKey: 'ragJobFinished',
      params: { id: 'job-1', status: 'Failed' },
    });
  });
});

describe("a job's planning", () => {
  const project = { kind: 'project', continuation: undefined } as const;
  const tasks = { kind: 'task', continuation: 'c2' } as const;

  it('stands at the start, at its cursor, and nowhere once planned', () => {
    expect(planningAt({ planned: false, planCursor: null })).toEqual(project);
    expect(planningAt({ planned: false, planCursor: tasks })).toEqual(tasks);
    expect(planningAt({ planned: true, planCursor: tasks })).toBeNull();
  });

  it('still stands at a step only while neither its kind nor its continuation has moved on', () => {
    expect(standsAt({ planned: false, planCursor: null }, project)).toBe(true);
    expect(standsAt({ planned: false, planCursor: tasks }, { kind: 'task', continuation: 'c2' })).toBe(true);
    expect(standsAt({ planned: false, planCursor: tasks }, { kind: 'task', continuation: 'c1' })).toBe(false);
    expect(standsAt({ planned: false, planCursor: tasks }, { kind: 'project', continuation: 'c2' })).toBe(false);
    expect(standsAt({ planned: true, planCursor: null }, project)).toBe(false);
  });
});

describe("a hold on a job's finishing or a batch", () => {
  const now = Date.now();
  const until = new Date(now + 1).toISOString();

  it("is held by another message's run until its lease is over, never against the run that holds it", () => {
    expect(heldByOther(undefined, 'm1', now)).toBe(false);
    expect(heldByOther({ runner: 'm2', until }, 'm1', now)).toBe(true);
    expect(heldByOther({ runner: 'm2', until }, 'm1', now + 1)).toBe(false);
    expect(heldByOther({ runner: 'm1', until }, 'm1', now)).toBe(false);
  });
});

describe("a job's end", () => {
  const counts = { sources: 1, chunks: 2, written: 2, unchanged: 0, deleted: 0 };

  it('is Succeeded with its counts, Cancelled, or Failed with its error or else the last attempt’s', () => {
    expect(ended({ counts }, 'old', 'at')).toEqual({ status: 'Succeeded', counts, error: null, completedAt: 'at' });
    expect(ended({ cancelled: true }, 'old', 'at')).toEqual({ status: 'Cancelled', error: null, completedAt: 'at' });
    expect(ended({ error: 'Broke.' }, 'old', 'at')).toEqual({ status: 'Failed', error: 'Broke.', completedAt: 'at' });
    expect(ended({ error: undefined }, 'old', 'at').error).toBe("Gave up after the queue's last retry. Last error: old");
    expect(ended({ error: undefined }, undefined, 'at').error).toBe("Gave up after the queue's last retry.");
  });

  it('sends an event when it succeeded or failed, none when cancelled', () => {
    expect([endEvent('Succeeded'), endEvent('Failed'), endEvent('Cancelled')]).toEqual(['rag.job.succeeded', 'rag.job.failed', undefined]);
  });
});
