import { describe, expect, it } from 'vitest';
import { priorityRank, TASK_DEFAULTS } from '../../../shared/domain/tasks.js';

describe('tasks', () => {
  it('are Todo and Medium unless the request says otherwise', () => {
    expect(TASK_DEFAULTS).toEqual({ status: 'Todo', priority: 'Medium' });
  });

  it('rank priorities from 1 (Low) to 4 (Urgent)', () => {
    expect(['Low', 'Medium', 'High', 'Urgent'].map((priority) => priorityRank(priority as 'Low'))).toEqual([1, 2, 3, 4]);
  });
});
