import { expect } from 'vitest';
import { auditCrashSuite } from '../helpers/audit-crash.js';
import { TEST_PASSWORD } from '../helpers/app.js';

let n = 0;
const unique = (what: string) => `${what}-${++n}-${Date.now()}`;

auditCrashSuite('sessions, profile, users, API keys, enrollment tokens and branding', [
  {
    name: 'login',
    action: 'session.login',
    prepare: async (f) => {
      const user = await f.t.createUser('viewer');
      const db = f.t.testStore.store.db;
      return {
        request: { method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: TEST_PASSWORD } },
        // no route lists sessions
        observe: () => db.selectFrom('sessions').select('id').where('user_id', '=', user.id).execute(),
      };
    },
  },
  {
    name: 'logout',
    action: 'session.logout',
    prepare: async (f) => {
      const { cookie } = await f.t.loginAs('operator');
      return {
        request: { method: 'POST', url: '/api/v1/auth/logout', headers: { cookie } },
        observe: { method: 'GET', url: '/api/v1/auth/me', headers: { cookie } },
      };
    },
  },
  {
    name: 'profile update',
    action: 'profile.update',
    prepare: async () => ({
      request: { method: 'PATCH', url: '/api/v1/profile', payload: { display_name: unique('crash') } },
      observe: { method: 'GET', url: '/api/v1/profile' },
    }),
  },
  {
    name: 'user create',
    action: 'user.create',
    prepare: async () => ({
      request: { method: 'POST', url: '/api/v1/users', payload: { email: `${unique('crash')}@example.test`, password: 'long enough', role: 'viewer' } },
      observe: { method: 'GET', url: '/api/v1/users?limit=200' },
    }),
  },
  {
    name: 'user role change',
    action: 'user.role.change',
    prepare: async (f) => {
      const user = await f.t.createUser('viewer');
      return {
        request: { method: 'PATCH', url: `/api/v1/users/${user.id}`, payload: { role: 'operator' } },
        observe: { method: 'GET', url: '/api/v1/users?limit=200' },
      };
    },
  },
  {
    name: 'user delete',
    action: 'user.delete',
    prepare: async (f) => {
      const user = await f.t.createUser('viewer');
      return { request: { method: 'DELETE', url: `/api/v1/users/${user.id}` }, observe: { method: 'GET', url: '/api/v1/users?limit=200' } };
    },
  },
  {
    name: 'API key create',
    action: 'api-key.create',
    prepare: async () => ({
      request: { method: 'POST', url: '/api/v1/api-keys', payload: { name: unique('crash'), role: 'viewer' } },
      observe: { method: 'GET', url: '/api/v1/api-keys?limit=200' },
    }),
  },
  {
    name: 'API key revoke',
    action: 'api-key.revoke',
    prepare: async (f) => {
      const key = await f.api('POST', '/api/v1/api-keys', { name: unique('crash'), role: 'viewer' });
      expect(key.status).toBe(201);
      return { request: { method: 'DELETE', url: `/api/v1/api-keys/${key.body.id}` }, observe: { method: 'GET', url: '/api/v1/api-keys?limit=200' } };
    },
  },
  {
    name: 'enrollment token create',
    action: 'enroll-token.create',
    prepare: async () => ({
      request: { method: 'POST', url: '/api/v1/enroll-tokens', payload: { name: unique('crash') } },
      observe: { method: 'GET', url: '/api/v1/enroll-tokens?limit=200' },
    }),
  },
  {
    name: 'enrollment token delete',
    action: 'enroll-token.delete',
    prepare: async (f) => {
      const token = await f.api('POST', '/api/v1/enroll-tokens', { name: unique('crash') });
      expect(token.status).toBe(201);
      return {
        request: { method: 'DELETE', url: `/api/v1/enroll-tokens/${token.body.id}` },
        observe: { method: 'GET', url: '/api/v1/enroll-tokens?limit=200' },
      };
    },
  },
  {
    name: 'branding update',
    action: 'branding.update',
    prepare: async () => ({
      request: {
        method: 'PUT',
        url: '/api/v1/admin/branding',
        payload: { company_name: unique('crash'), primary_color: '#123456', accent_color: '#654321', logo_data_url: null },
      },
      observe: { method: 'GET', url: '/api/v1/admin/branding' },
    }),
  },
]);
