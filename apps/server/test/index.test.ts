import { describe, expect, it } from 'vitest';
import * as server from '../src/index.js';

describe('@svc/server public surface', () => {
  it('exports exactly this list', () => {
    expect(Object.keys(server).sort()).toEqual(
      [
        'API_PREFIX',
        'ConfigError',
        'ERROR_TABLE',
        'PERMISSIONS',
        'ROLES',
        'ROLE_PERMISSIONS',
        'RouteWithoutPermissionError',
        'SERVER_ERROR_CODES',
        'ServerError',
        'bootstrapAdmin',
        'buildApp',
        'createTenant',
        'ensureDefaultTenant',
        'hashSecret',
        'insertApiKey',
        'migrateToLatest',
        'newSecret',
        'openStore',
        'parseConfig',
        'startPglite',
      ].sort(),
    );
  });
});
