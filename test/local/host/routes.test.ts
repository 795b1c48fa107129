import { describe, expect, it } from 'vitest';
import { createRouter } from '../../../local/host/routes.js';

describe('local host routing', () => {
  const router = createRouter([
    { template: 'api/{*path}', methods: ['GET', 'POST', 'PUT', 'DELETE'], target: 'fallback' },
    { template: 'api/projects/{projectId}', methods: ['GET'], target: 'get' },
    { template: 'api/projects', methods: ['GET'], target: 'list' },
    { template: 'api/projects', methods: ['POST'], target: 'create' },
    { template: 'api/users/me', methods: ['GET'], target: 'me' },
    { template: 'api/users/{id}', methods: ['GET'], target: 'user' },
    { template: 'api/items/{id:int}', methods: ['GET'], target: 'item' },
  ]);

  it('matches literal, parameter and method', () => {
    expect(router.find('GET', '/api/projects')?.route.target).toBe('list');
    expect(router.find('POST', '/api/projects')?.route.target).toBe('create');
    expect(router.find('GET', '/api/projects/PRJ-1')).toMatchObject({ route: { target: 'get' }, params: { projectId: 'PRJ-1' } });
  });

  it('prefers a literal segment to a parameter, and both to the catch-all', () => {
    expect(router.find('GET', '/api/users/me')?.route.target).toBe('me');
    expect(router.find('GET', '/api/users/abc')?.route.target).toBe('user');
    expect(router.find('GET', '/api/unknown/thing')).toMatchObject({ route: { target: 'fallback' }, params: { path: 'unknown/thing' } });
  });

  it('falls through to the catch-all when the method does not match', () => {
    expect(router.find('DELETE', '/api/projects')?.route.target).toBe('fallback');
  });

  it('matches literals case-insensitively and decodes parameters', () => {
    expect(router.find('GET', '/API/Projects')?.route.target).toBe('list');
    expect(router.find('GET', '/api/projects/%E3%83%86')?.params).toEqual({ projectId: 'テ' });
  });

  it('matches the catch-all with nothing after its prefix, with or without the slash, the parameter then absent (as ASP.NET)', () => {
    for (const path of ['/api', '/api/', '/API', '/api//'])
      expect(router.find('GET', path), path).toEqual({ route: expect.objectContaining({ target: 'fallback' }), params: {} });
    expect(router.find('PATCH', '/api')).toBeUndefined();
    expect(router.find('GET', '/')).toBeUndefined();
    const root = createRouter([
      { template: 'api', methods: ['GET'], target: 'literal' },
      { template: 'api/{*path}', methods: ['GET', 'POST'], target: 'fallback' },
      { template: 'api/docs/{name?}', methods: ['GET'], target: 'docs' },
      { template: 'api/docs/{*rest}', methods: ['GET', 'POST'], target: 'docs-fallback' },
    ]);
    expect(root.find('GET', '/api/')?.route.target).toBe('literal');
    expect(root.find('POST', '/api/')?.route.target).toBe('fallback');
    expect(root.find('GET', '/api/docs')?.route.target).toBe('docs');
    expect(root.find('POST', '/api/docs/')).toMatchObject({ route: { target: 'docs-fallback' }, params: {} });
  });

  it('applies constraints', () => {
    expect(router.find('GET', '/api/items/42')?.route.target).toBe('item');
    expect(router.find('GET', '/api/items/abc')?.route.target).toBe('fallback');
  });

  it('hands a parameter over as sent when it cannot be decoded, or holds `;` or thousands of characters', () => {
    expect(router.find('GET', '/api/projects/%E0%A4%A')).toMatchObject({ route: { target: 'get' }, params: { projectId: '%E0%A4%A' } });
    expect(router.find('GET', '/api/projects/PRJ-1;x=1')?.params).toEqual({ projectId: 'PRJ-1;x=1' });
    expect(router.find('GET', `/api/projects/${'x'.repeat(5000)}`)?.params.projectId).toHaveLength(5000);
  });

  it('answers HEAD only from routes that name it', () => {
    expect(router.find('HEAD', '/api/projects')).toBeUndefined();
  });

  it('matches a path only as long as the template, with an optional last parameter left out or given', () => {
    const strict = createRouter([
      { template: 'api/projects/{projectId}', methods: ['GET'], target: 'get' },
      { template: 'api/docs/{name?}', methods: ['GET'], target: 'docs' },
    ]);
    expect(strict.find('GET', '/api/projects')).toBeUndefined();
    expect(strict.find('GET', '/api/projects/PRJ-1/tasks')).toBeUndefined();
    expect(strict.find('GET', '/api/docs')).toMatchObject({ route: { target: 'docs' }, params: {} });
    expect(strict.find('GET', '/api/docs/guide')).toMatchObject({ route: { target: 'docs' }, params: { name: 'guide' } });
    expect(strict.find('GET', '/api/docs/guide/more')).toBeUndefined();
  });
});
