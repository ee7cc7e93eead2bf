import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTufRefresh } from '../../src/jobs/tuf-refresh.js';
import { createRepoFixture, type RepoFixture } from '../fixtures/signing-repo.js';

const HOUR = 3_600_000;

async function timestampVersion(f: RepoFixture, tenantId: string): Promise<number> {
  const row = await f.db
    .selectFrom('tuf_metadata')
    .select((eb) => eb.fn.max('version').as('v'))
    .where('tenant_id', '=', tenantId)
    .where('role', '=', 'timestamp')
    .executeTakeFirstOrThrow();
  return Number(row.v);
}

describe('TUF refresh job (server main)', () => {
  let f: RepoFixture;
  beforeAll(async () => {
    f = await createRepoFixture('pglite');
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('re-signs a timestamp nearing expiry on its own, and leaves a fresh one alone', async () => {
    const tenant = await f.newTenant();
    await f.repo.ensureTenantRepo(tenant);
    const start = f.clock.now;
    const errors: unknown[] = [];
    const job = startTufRefresh(f.repo, () => f.clock.now, { intervalMs: 20, onError: (e) => errors.push(e) });
    try {
      await new Promise((r) => setTimeout(r, 200));
      expect(await timestampVersion(f, tenant)).toBe(1); // fresh: nothing due
      f.clock.now = new Date(start.getTime() + 13 * HOUR); // under 12 h left of the 1-day timestamp
      await expect.poll(() => timestampVersion(f, tenant), { timeout: 5000 }).toBe(2);
      await new Promise((r) => setTimeout(r, 200));
      expect(await timestampVersion(f, tenant)).toBe(2); // once, not on every tick
    } finally {
      await job.stop();
    }
    expect(errors).toEqual([]);
  });

  it('reports a failing refresh through onError and keeps running', async () => {
    let calls = 0;
    const errors: unknown[] = [];
    const job = startTufRefresh(
      {
        refreshAllDue: async () => {
          calls++;
          return { results: [], failures: [{ tenantId: 't', error: new Error('disk full') }] };
        },
      },
      () => new Date(),
      { intervalMs: 10, onError: (e) => errors.push(e) },
    );
    await expect.poll(() => calls, { timeout: 2000 }).toBeGreaterThanOrEqual(2);
    await job.stop();
    expect((errors[0] as Error).message).toBe('disk full');
  });
});
