import { access, readFile } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROLES } from '../../shared/roles.js';

const TEAMS_AND_OFFICE_CLIENTS = [
  '1fec8e78-bce4-4aaf-ab1b-5451cc387264',
  '5e3ce6c0-2b1f-4285-8d4b-75ee78787346',
  '4765445b-32c6-49b0-83e6-1d93765276ca',
  '0ec893e0-5785-4de6-99da-4ed124e5296c',
  'd3590ed6-52b3-4102-aeff-aad2292ab01c',
  'bc59ab01-8403-45c6-8796-ac3ef710b3e3',
  '27922004-5251-4030-b22d-91ecd9a37ea4',
  'ea5a67f6-b6f3-4338-b240-c655ddc3cc8e',
];
const MICROSOFT_GRAPH = '00000003-0000-0000-c000-000000000000';
const USER_READ_ALL_DELEGATED = 'a154be20-db9c-4678-8ab7-66f6cc099a59';

let manifest: any;
beforeAll(async () => {
  manifest = JSON.parse(await readFile(new URL('../../docs/app-registration.manifest.json', import.meta.url), 'utf8'));
});

describe('the app registration manifest (docs/app-registration.manifest.json)', () => {
  it('has exactly the app roles the code knows, for users and applications, each with its own id', () => {
    expect(manifest.appRoles.map((role: any) => role.value).sort()).toEqual([...ROLES].sort());
    for (const role of manifest.appRoles) expect(role, role.value).toMatchObject({ isEnabled: true, allowedMemberTypes: ['User', 'Application'] });
    expect(new Set(manifest.appRoles.map((role: any) => role.id)).size).toBe(ROLES.length);
  });

  it('exposes api://<clientId> with the access_as_user scope, for v2 tokens', () => {
    expect(manifest.identifierUris).toEqual(['api://{clientId}']);
    expect(manifest.api.requestedAccessTokenVersion).toBe(2);
    expect(manifest.api.oauth2PermissionScopes).toEqual([expect.objectContaining({ value: 'access_as_user', type: 'User', isEnabled: true })]);
  });

  it('pre-authorises the Teams and Office clients for that scope', () => {
    const scopeId = manifest.api.oauth2PermissionScopes[0].id;
    expect(manifest.api.preAuthorizedApplications.map((client: any) => client.appId).sort()).toEqual([...TEAMS_AND_OFFICE_CLIENTS].sort());
    for (const client of manifest.api.preAuthorizedApplications) expect(client.delegatedPermissionIds, client.appId).toEqual([scopeId]);
  });

  it("asks for Microsoft Graph's delegated User.Read.All, which On-Behalf-Of uses for the directory", () => {
    expect(manifest.requiredResourceAccess).toEqual([{ resourceAppId: MICROSOFT_GRAPH, resourceAccess: [{ id: USER_READ_ALL_DELEGATED, type: 'Scope' }] }]);
  });

  it('has the roles that the guide grants to calling apps, which it looks up by value in the manifest', async () => {
    const guide = await readFile(new URL('../../docs/app-registration.md', import.meta.url), 'utf8');
    const granted = [...guide.matchAll(/select\(\.value == "([^"]+)"\) \| \.id/g)].map((match) => match[1]);
    expect(granted.length).toBeGreaterThan(0);
    expect(manifest.appRoles.map((role: any) => role.value)).toEqual(expect.arrayContaining(granted));
    // A role is named by its value, never by a bare id the reader cannot check.
    expect(guide).not.toMatch(/[0-9a-f]{8}-[0-9a-f-]{27}=Role/);
  });

  it('cites files and sections that exist', async () => {
    const guide = await readFile(new URL('../../docs/app-registration.md', import.meta.url), 'utf8');
    const files = [...guide.matchAll(/`((?:shared|test|docs|infra|local|functions|tools)\/[\w./-]+\.\w+)`/g)].map((match) => match[1]!);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) await expect(access(new URL(`../../${file}`, import.meta.url)), file).resolves.toBeUndefined();
    for (const [, document, anchor] of guide.matchAll(/\]\(([\w-]+\.md)#([\w-]+)\)/g)) {
      const target = await readFile(new URL(`../../docs/${document}`, import.meta.url), 'utf8');
      const headings = [...target.matchAll(/^#+ (.+)$/gm)].map((match) =>
        match[1]!
          .toLowerCase()
          .replace(/[^\w\s-]/g, '')
          .replace(/\s+/g, '-'),
      );
      expect(headings, `${document}#${anchor}`).toContain(anchor);
    }
  });
});
