import { describe, expect, it } from 'vitest';
import { corsPolicyFrom, corsSettingsFromLocalSettings } from '../../../local/host/cors.js';

const ADD_IN = 'https://addin.contoso.test';
const LOCAL_PAGE = 'http://localhost:3000';

describe('the CORS setting', () => {
  it("takes local.settings.json's Host.CORS and Host.CORSCredentials as the settings Azure hands the host", () => {
    expect(corsSettingsFromLocalSettings({ CORS: `${LOCAL_PAGE},${ADD_IN}`, CORSCredentials: false, LocalHttpPort: 7071 })).toEqual({
      CORS_ALLOWED_ORIGINS: `${LOCAL_PAGE},${ADD_IN}`,
      CORS_SUPPORT_CREDENTIALS: 'false',
    });
    expect(corsSettingsFromLocalSettings({ LocalHttpPort: 7071 })).toEqual({});
  });

  it("reads a comma-separated list or Azure's JSON array, compares origins as browsers send them, and refuses what is no origin", () => {
    expect(corsPolicyFrom({ CORS_ALLOWED_ORIGINS: ' HTTPS://AddIn.Contoso.test/ , http://localhost:3000' })).toEqual({
      origins: [ADD_IN, LOCAL_PAGE],
      supportCredentials: false,
    });
    expect(corsPolicyFrom({ CORS_ALLOWED_ORIGINS: `["${ADD_IN}"]`, CORS_SUPPORT_CREDENTIALS: 'True' })).toEqual({
      origins: [ADD_IN],
      supportCredentials: true,
    });
    expect(corsPolicyFrom({ CORS_ALLOWED_ORIGINS: ' ' })).toBeUndefined();
    expect(() => corsPolicyFrom({ CORS_ALLOWED_ORIGINS: `${ADD_IN}/taskpane.html` })).toThrow(/is not an origin/);
    expect(() => corsPolicyFrom({ CORS_ALLOWED_ORIGINS: `*,${ADD_IN}` })).toThrow(/cannot be listed with others/);
  });
});
