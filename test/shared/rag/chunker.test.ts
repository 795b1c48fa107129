import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_CHUNK_CHARACTERS, OVERLAP_CHARACTERS, projectChunks, splitIntoChunks, taskChunks } from '../../../shared/rag/chunker.js';
import type { Project } from '../../../shared/schemas/projects.js';
import type { Task } from '../../../shared/schemas/tasks.js';

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

describe('splitIntoChunks, for any text of sentences', () => {
  /** A sentence with a marker of its place, of `length` characters to 14 more (under the limit), words of 1 to 12 letters, ending with `end`. */
  const sentenceOf = (index: number, length: number, end: string) => {
    const words: string[] = [`⟨${index}⟩`];
    while (words.join(' ').length < length) words.push('w'.repeat(1 + ((index + words.length) % 12)));
    return `${words.join(' ')}${end}`;
  };
  const texts = fc
    .array(fc.record({ length: fc.integer({ min: 1, max: MAX_CHUNK_CHARACTERS - 20 }), end: fc.constantFrom('.', '!', '?', '。') }), {
      minLength: 1,
      maxLength: 30,
    })
    .map((shapes) => shapes.map(({ length, end }, index) => sentenceOf(index, length, end)));
  /** The sentences a chunk holds, by their markers: it must be them, in order, joined by one space. */
  const runOf = (chunk: string, sentences: string[]) => {
    const places = [...chunk.matchAll(/⟨(\d+)⟩/g)].map((found) => Number(found[1]));
    expect(chunk).toBe(sentences.slice(places[0], places.at(-1)! + 1).join(' '));
    return { first: places[0]!, last: places.at(-1)! };
  };
  const size = (text: string) => [...text].length;

  it('packs whole sentences as full as the limit allows, loses none, and begins each chunk with as much of the last as the overlap allows', () => {
    fc.assert(
      fc.property(texts, (sentences) => {
        const chunks = splitIntoChunks(sentences.join(' '));
        const runs = chunks.map((chunk) => runOf(chunk, sentences));
        expect(runs[0]!.first).toBe(0);
        expect(runs.at(-1)!.last).toBe(sentences.length - 1);
        for (const [index, chunk] of chunks.entries()) {
          expect(size(chunk)).toBeLessThanOrEqual(MAX_CHUNK_CHARACTERS);
          const next = runs[index + 1];
          if (!next) continue;
          const { first, last } = runs[index]!;
          // Full: the next new sentence would not have fitted.
          expect(size(chunk) + 1 + size(sentences[last + 1]!)).toBeGreaterThan(MAX_CHUNK_CHARACTERS);
          // Overlap: whole sentences of this chunk's end, at most OVERLAP_CHARACTERS, and one more would not have been allowed.
          expect(next.first).toBeGreaterThan(first);
          expect(next.first).toBeLessThanOrEqual(last + 1);
          const overlap = sentences.slice(next.first, last + 1).join(' ');
          expect(size(overlap)).toBeLessThanOrEqual(OVERLAP_CHARACTERS);
          const longer = sentences.slice(next.first - 1, last + 1).join(' ');
          const withFirstNew = `${longer} ${sentences[last + 1]!}`;
          if (next.first - 1 >= first) expect(size(longer) > OVERLAP_CHARACTERS || size(withFirstNew) > MAX_CHUNK_CHARACTERS).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('carries over a sentence of exactly the overlap', () => {
    const [a, b, c] = [`${'a'.repeat(998)}.`, `${'b'.repeat(OVERLAP_CHARACTERS - 1)}.`, `${'c'.repeat(499)}.`];
    expect(splitIntoChunks(`${a} ${b} ${c}`)).toEqual([`${a} ${b}`, `${b} ${c}`]);
  });

  it('cuts a sentence over the limit at its last space past the middle, else at the limit, and the pieces give it back', () => {
    for (const exactly of ['x'.repeat(MAX_CHUNK_CHARACTERS), `${'ab '.repeat(399)}abc`]) expect(splitIntoChunks(exactly)).toEqual([exactly]);
    const words = Array.from({ length: 500 }, (_, index) => `word${index}`).join(' ');
    const pieces = splitIntoChunks(words);
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join(' ')).toBe(words);
    for (const [index, piece] of pieces.entries()) {
      expect(size(piece)).toBeLessThanOrEqual(MAX_CHUNK_CHARACTERS);
      // Each piece ends at the last space the limit allows.
      if (index < pieces.length - 1) expect(size(`${piece} ${pieces[index + 1]!.split(' ')[0]!}`)).toBeGreaterThan(MAX_CHUNK_CHARACTERS);
    }
    // A space at the middle or before it is no place to cut: the cut is at the limit, by characters.
    const middle = `${'a'.repeat(MAX_CHUNK_CHARACTERS / 2)} ${'b'.repeat(1000)}`;
    expect(splitIntoChunks(middle)[0]).toBe(middle.slice(0, MAX_CHUNK_CHARACTERS));
    // A space only near the start is no place to cut: the cut is at the limit, by characters.
    const early = `${'a'.repeat(100)} ${'😀'.repeat(1500)}`;
    const [head, tail] = splitIntoChunks(early);
    expect(head).toBe([...early].slice(0, MAX_CHUNK_CHARACTERS).join(''));
    expect(tail!.startsWith([...early].slice(MAX_CHUNK_CHARACTERS, MAX_CHUNK_CHARACTERS + 10).join(''))).toBe(true);
  });

  it('ends a sentence at . ! ? followed by space, at 。！？ alone, and at a blank line; one line break is no end', () => {
    expect(splitIntoChunks('One.  Two')).toEqual(['One. Two']);
    expect(splitIntoChunks('Line one\nline two')).toEqual(['Line one\nline two']);
    expect(splitIntoChunks('Para one\n\n\nPara two')).toEqual(['Para one Para two']);
    expect(splitIntoChunks('これは文です。次の文！')).toEqual(['これは文です。 次の文！']);
    expect(splitIntoChunks('v1.2 is out')).toEqual(['v1.2 is out']);
    expect(splitIntoChunks('  \n\n  ')).toEqual([]);
  });
});

describe('chunks of projects and tasks', () => {
  it('begin with a header of the fields a question may name, then a blank line and the text', () => {
    expect(projectChunks(project).map((chunk) => chunk.content)).toEqual(['Project: Onboarding\nStatus: Active\nOwner: o@contoso.test\n\nShort.']);
    const full = { ...task, assignee: 'kim@contoso.test', description: 'Film it.' };
    expect(taskChunks(full)[0]!.content).toBe(
      'Task: Record video\nProject: PRJ-1001\nStatus: Todo\nPriority: High\nAssignee: kim@contoso.test\nDue: 2027-02-01\n\nFilm it.',
    );
    expect(taskChunks({ ...task, dueDate: null })[0]!.content).toBe('Task: Record video\nProject: PRJ-1001\nStatus: Todo\nPriority: High');
  });

  it('are one header-only chunk for a blank description', () => {
    expect(projectChunks({ ...project, description: ' \n ' }).map((chunk) => [chunk.id, chunk.content])).toEqual([
      ['PRJ-1001-c0', 'Project: Onboarding\nStatus: Active\nOwner: o@contoso.test'],
    ]);
  });

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
