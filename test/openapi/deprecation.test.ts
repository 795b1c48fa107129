/**
 * How the document describes an operation announced for removal. No operation of v1 is deprecated
 * yet, so the builder gets a stand-in registration whose definition says so.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { OperationDefinition } from '../../shared/http/operation-definition.js';
import { buildOpenApiDocument } from '../../tools/openapi-document.js';
import { project } from '../../shared/schemas/projects.js';

function documentWith(definition: OperationDefinition): any {
  return buildOpenApiDocument([{ name: 'legacy-projects-list', route: 'api/legacy/projects', methods: ['GET'], handler: { definition } }], {
    version: '1.0.0',
    routePrefix: '',
  });
}

const legacyList: OperationDefinition = {
  permission: 'projects:read',
  success: { status: 200, body: z.array(project), headers: ['Link'] },
  docs: { summary: 'List projects, the old way' },
};

describe('a deprecated operation in the OpenAPI document', () => {
  it('is marked deprecated, says until when, and documents Deprecation, Sunset and the link to its replacement', () => {
    const document = documentWith({
      ...legacyList,
      deprecated: { since: '2027-01-01T00:00:00Z', sunset: '2028-01-01T00:00:00Z', link: 'https://example.test/api/v2/projects' },
    });
    const operation = document.paths['/legacy/projects'].get;
    expect(operation.deprecated).toBe(true);
    expect(operation.description).toMatch(
      /^\*\*Deprecated\*\* since 2027-01-01; it will be removed on 2028-01-01\. See https:\/\/example\.test\/api\/v2\/projects\./,
    );
    expect(operation.responses['200'].headers).toMatchObject({
      Deprecation: { $ref: '#/components/headers/Deprecation' },
      Sunset: { $ref: '#/components/headers/Sunset' },
      Link: { $ref: '#/components/headers/DeprecationLink' },
    });
    const { headers } = document.components;
    expect(headers.Deprecation.description).toContain('RFC 9745');
    expect(headers.Sunset.description).toContain('RFC 8594');
    expect(headers.DeprecationLink.description).toContain('rel="deprecation"');
  });

  it('is not marked when the operation is current', () => {
    const operation = documentWith(legacyList).paths['/legacy/projects'].get;
    expect(operation.deprecated).toBeUndefined();
    expect(Object.keys(operation.responses['200'].headers)).toEqual(['X-Request-Id', 'Link']);
    expect(operation.responses['200'].headers.Link).toEqual({ $ref: '#/components/headers/Link' });
  });
});
