import { describe, expect, it } from 'vitest';
import { compileRoute, createRouter } from '../../local/routes.js';

describe('local host routing', () => {
  const router = createRouter([
    compileRoute('api/{*path}', ['GET', 'POST', 'PUT', 'DELETE'], 'fallback'),
    compileRoute('api/projects/{projectId}', ['GET'], 'get'),
    compileRoute('api/projects', ['GET'], 'list'),
    compileRoute('api/projects', ['POST'], 'create'),
    compileRoute('api/users/me', ['GET'], 'me'),
    compileRoute('api/users/{id}', ['GET'], 'user'),
    compileRoute('api/items/{id:int}', ['GET'], 'item'),
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

  it('applies constraints, and leaves undecodable segments to the catch-all', () => {
    expect(router.find('GET', '/api/items/42')?.route.target).toBe('item');
    expect(router.find('GET', '/api/items/abc')?.route.target).toBe('fallback');
    expect(router.find('GET', '/api/projects/%E0%A4%A')?.route.target).toBe('fallback');
  });

  it('matches a path only as long as the template, with an optional last parameter left out or given', () => {
    const strict = createRouter([compileRoute('api/projects/{projectId}', ['GET'], 'get'), compileRoute('api/docs/{name?}', ['GET'], 'docs')]);
    expect(strict.find('GET', '/api/projects')).toBeUndefined();
    expect(strict.find('GET', '/api/projects/PRJ-1/tasks')).toBeUndefined();
    expect(strict.find('GET', '/api/docs')).toMatchObject({ route: { target: 'docs' }, params: {} });
    expect(strict.find('GET', '/api/docs/guide')).toMatchObject({ route: { target: 'docs' }, params: { name: 'guide' } });
    expect(strict.find('GET', '/api/docs/guide/more')).toBeUndefined();
  });
});
