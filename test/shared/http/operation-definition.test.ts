/**
 * The one rule an operation's definition carries as code (shared/http/operation-definition.ts): a body schema
 * with no required field may be left out of the request, whatever the operation; the HTTP edge and
 * the API description both read it from there.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { bodyMayBeOmitted } from '../../../shared/http/operation-definition.js';
import { createProjectBody } from '../../../shared/schemas/projects.js';
import { startRagIndexBody } from '../../../shared/schemas/rag.js';

describe('a body that may be left out', () => {
  it('is one whose fields are all optional or have defaults', () => {
    expect(bodyMayBeOmitted(z.strictObject({ mode: z.enum(['incremental', 'full']).default('incremental'), ids: z.array(z.string()).optional() }))).toBe(true);
    expect(bodyMayBeOmitted(z.object({}))).toBe(true);
    // The API's own: a RAG rebuild needs nothing, a project needs its name.
    expect(bodyMayBeOmitted(startRagIndexBody)).toBe(true);
    expect(bodyMayBeOmitted(createProjectBody)).toBe(false);
  });

  it('is not one with a required field, nor one that is not an object', () => {
    expect(bodyMayBeOmitted(z.strictObject({ name: z.string(), note: z.string().optional() }))).toBe(false);
    expect(bodyMayBeOmitted(z.array(z.string()))).toBe(false);
    expect(bodyMayBeOmitted(z.string())).toBe(false);
  });
});
