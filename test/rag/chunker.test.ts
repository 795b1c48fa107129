import { describe, expect, it } from 'vitest';
import { MAX_CHUNK_CHARACTERS, OVERLAP_CHARACTERS, projectChunks, splitIntoChunks, taskChunks } from '../../shared/rag/chunker.js';
import type { Project } from '../../shared/schemas/projects.js';
import type { Task } from '../../shared/schemas/tasks.js';

const project: Project = {
  id: 'PRJ-1001',
  name: 'Onboarding',
  description: 'Short.',
  status: 'Active',
  owner: 'o@contoso.test',
  members: ['o@contoso.test'],
  createdAt: '2027-01-01T00:00:00.000Z',
  updatedAt: '2027-01-02T00:00:00.000Z',
  createdBy: 'x',
};
const task: Task = {
  id: 'TSK-1001',
  projectId: 'PRJ-1001',
  title: 'Record video',
  description: '',
  status: 'Todo',
  priority: 'High',
  assignee: null,
  dueDate: '2027-02-01',
  createdAt: '2027-01-01T00:00:00.000Z',
  updatedAt: '2027-01-03T00:00:00.000Z',
  createdBy: 'x',
};

const sentence = (index: number) => `Sentence number ${index} says something useful about the course material.`;

describe('splitIntoChunks', () => {
  it('keeps short text whole', () => {
    expect(splitIntoChunks('One. Two!  Three?')).toEqual(['One. Two! Three?']);
  });

  it('splits long text on sentence boundaries, within the limit, with overlap', () => {
    const text = Array.from({ length: 80 }, (_, index) => sentence(index)).join(' ');
    const chunks = splitIntoChunks(text);
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks) {
      expect([...chunk].length).toBeLessThanOrEqual(MAX_CHUNK_CHARACTERS);
      expect(chunk).toMatch(/^Sentence number \d+ .*material\.$/);
    }
    for (let index = 1; index < chunks.length; index++) {
      // The chunk begins with the previous one's last whole sentences, no more than the overlap.
      const previous = chunks[index - 1]!;
      const firstSentence = chunks[index]!.split(/(?<=\.) /)[0]!;
      const overlap = previous.slice(previous.lastIndexOf(firstSentence));
      expect(previous.includes(firstSentence)).toBe(true);
      expect(chunks[index]!.startsWith(overlap)).toBe(true);
      expect(overlap.length).toBeLessThanOrEqual(OVERLAP_CHARACTERS);
    }
    // Every sentence survives.
    for (let index = 0; index < 80; index++) expect(chunks.some((chunk) => chunk.includes(sentence(index)))).toBe(true);
  });

  it('splits Japanese sentences at 。 and cuts a sentence with no break at all', () => {
    const japanese = 'これは文です。'.repeat(400);
    for (const chunk of splitIntoChunks(japanese)) expect([...chunk].length).toBeLessThanOrEqual(MAX_CHUNK_CHARACTERS);
    const unbroken = 'x'.repeat(3 * MAX_CHUNK_CHARACTERS);
    expect(splitIntoChunks(unbroken).join('')).toBe(unbroken);
  });
});

describe('chunks of projects and tasks', () => {
  it('carry their metadata and a content hash', () => {
    const [chunk] = projectChunks(project);
    expect(chunk).toMatchObject({
      id: 'PRJ-1001-c0',
      sourceType: 'project',
      sourceId: 'PRJ-1001',
      projectId: 'PRJ-1001',
      title: 'Onboarding',
      chunkIndex: 0,
      updatedAt: project.updatedAt,
    });
    expect(chunk!.content).toContain('Short.');
    expect(chunk!.contentHash).toMatch(/^[\w-]{43}$/);
    expect(taskChunks(task)[0]).toMatchObject({ id: 'TSK-1001-c0', sourceType: 'task', projectId: 'PRJ-1001', title: 'Record video' });
  });

  it('change hash when the content changes, not when only updatedAt does', () => {
    const [before] = projectChunks(project);
    expect(projectChunks({ ...project, updatedAt: '2030-01-01T00:00:00.000Z' })[0]!.contentHash).toBe(before!.contentHash);
    expect(projectChunks({ ...project, name: 'Renamed' })[0]!.contentHash).not.toBe(before!.contentHash);
  });

  it("do not put the project's name into a task's chunk", () => {
    expect(taskChunks(task)[0]!.content).not.toContain(project.name);
  });

  it('give a long description several chunks with consecutive ids', () => {
    const chunks = taskChunks({ ...task, description: Array.from({ length: 60 }, (_, index) => sentence(index)).join(' ') });
    expect(chunks.map((chunk) => chunk.id)).toEqual(chunks.map((_, index) => `TSK-1001-c${index}`));
    for (const chunk of chunks) expect(chunk.content.startsWith('Task: Record video')).toBe(true);
  });
});
