import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../src/auth/password.js';
import { bootstrapAdmin } from '../../src/resources/tenants/bootstrap.js';
import { ensureDefaultTenant } from '../../src/resources/tenants/queries.js';
import { availableDrivers, createTestStore, type TestStore } from '../helpers/store.js';

describe.each(availableDrivers())('default tenant and first admin on %s', (driver) => {
  let t: TestStore;
  beforeAll(async () => {
    t = await createTestStore(driver);
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it('creates one default tenant (a UUID), idempotently, even when raced', async () => {
    const ids = await Promise.all([ensureDefaultTenant(t.store.db), ensureDefaultTenant(t.store.db), ensureDefaultTenant(t.store.db)]);
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(await t.store.db.selectFrom('tenants').select('id').execute()).toHaveLength(1);
  });

  it('creates the first admin only when no user exists and the settings are given', async () => {
    const tenant = await ensureDefaultTenant(t.store.db);
    expect(await bootstrapAdmin(t.store.db, tenant, undefined)).toBe(false);
    expect(await bootstrapAdmin(t.store.db, tenant, { email: 'first@example.test', password: 'password123' })).toBe(true);
    expect(await bootstrapAdmin(t.store.db, tenant, { email: 'second@example.test', password: 'password123' })).toBe(false);
    const users = await t.store.db.selectFrom('users').selectAll().execute();
    expect(users).toHaveLength(1);
    expect(users[0]).toMatchObject({ email: 'first@example.test', role: 'admin', tenant_id: tenant });
    expect(users[0]!.password_hash).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(await verifyPassword('password123', users[0]!.password_hash)).toBe(true);
    expect(await verifyPassword('password124', users[0]!.password_hash)).toBe(false);
  });
});
