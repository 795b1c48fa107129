import { createHash } from 'node:crypto';
import type { Project } from '../schemas/projects.js';
import type { Task } from '../schemas/tasks.js';
import type { Chunk } from '../data/rag-index-repository.js';

/** Longest chunk body, in characters; a sentence longer than this is cut at word boundaries. */
export const MAX_CHUNK_CHARACTERS = 1_200;
/** How much of the end of one chunk starts the next, so a fact split across the cut is not lost. */
export const OVERLAP_CHARACTERS = 200;

const SENTENCE_END = /(?<=[.!?。！？])\s+|(?<=[。！？])|\n{2,}/u;

/** Sentences, with any sentence over the limit cut at spaces (or anywhere, for unbroken text). */
function sentences(text: string): string[] {
  return text
    .split(SENTENCE_END)
    .map((sentence) => sentence.trim())
    .filter(Boolean)
    .flatMap((sentence) => {
      const pieces: string[] = [];
      let rest = sentence;
      while ([...rest].length > MAX_CHUNK_CHARACTERS) {
        const characters = [...rest];
        const window = characters.slice(0, MAX_CHUNK_CHARACTERS).join('');
        const space = window.lastIndexOf(' ');
        const cut = space > MAX_CHUNK_CHARACTERS / 2 ? space : window.length;
        pieces.push(rest.slice(0, cut));
        rest = rest.slice(cut).trim();
      }
      // Never empty: the sentence is trimmed, and a cut leaves the part past the limit.
      pieces.push(rest);
      return pieces;
    });
}

/**
 * Splits text into chunks of whole sentences, each at most MAX_CHUNK_CHARACTERS long, where each
 * chunk after the first begins with the last sentences of the one before (up to OVERLAP_CHARACTERS).
 */
export function splitIntoChunks(text: string): string[] {
  const chunks: string[][] = [];
  let current: string[] = [];
  let length = 0;
  for (const sentence of sentences(text)) {
    const size = [...sentence].length;
    if (current.length > 0 && length + 1 + size > MAX_CHUNK_CHARACTERS) {
      chunks.push(current);
      const overlap: string[] = [];
      let overlapLength = 0;
      for (let index = current.length - 1; index >= 0; index--) {
        const previous = [...current[index]!].length;
        if (overlapLength + previous > OVERLAP_CHARACTERS || overlapLength + previous + 1 + size > MAX_CHUNK_CHARACTERS) break;
        overlap.unshift(current[index]!);
        overlapLength += previous + 1;
      }
      current = overlap;
      length = Math.max(0, overlapLength - 1);
    }
    current.push(sentence);
    length += (current.length > 1 ? 1 : 0) + size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks.map((chunk) => chunk.join(' '));
}

function hash(...parts: string[]): string {
  const digest = createHash('sha256');
  for (const part of parts) digest.update(part).update('\u0000');
  return digest.digest('base64url');
}

function chunksOf(source: Omit<Chunk, 'id' | 'chunkIndex' | 'content' | 'contentHash'>, header: string, body: string): Chunk[] {
  const bodies = body.trim() ? splitIntoChunks(body) : [''];
  return bodies.map((text, chunkIndex) => {
    const content = text ? `${header}\n\n${text}` : header;
    return {
      ...source,
      id: `${source.sourceId}-c${chunkIndex}`,
      chunkIndex,
      content,
      contentHash: hash(source.sourceType, source.sourceId, source.projectId, source.title, content),
    };
  });
}

export function projectChunks(project: Project): Chunk[] {
  const header = [`Project: ${project.name}`, `Status: ${project.status}`, `Owner: ${project.owner}`].join('\n');
  return chunksOf(
    { sourceType: 'project', sourceId: project.id, projectId: project.id, title: project.name, updatedAt: project.updatedAt },
    header,
    project.description,
  );
}

/** A task's chunks name its project by id only, so renaming a project rewrites only the project's chunks. */
export function taskChunks(task: Task): Chunk[] {
  const header = [
    `Task: ${task.title}`,
    `Project: ${task.projectId}`,
    `Status: ${task.status}`,
    `Priority: ${task.priority}`,
    ...(task.assignee ? [`Assignee: ${task.assignee}`] : []),
    ...(task.dueDate ? [`Due: ${task.dueDate}`] : []),
  ].join('\n');
  return chunksOf({ sourceType: 'task', sourceId: task.id, projectId: task.projectId, title: task.title, updatedAt: task.updatedAt }, header, task.description);
}
