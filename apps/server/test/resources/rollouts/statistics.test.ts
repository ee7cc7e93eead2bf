/**
 * A large rollout start leaves planner statistics that know its deployment
 * (resources/rollouts/queries.ts `analyzeDeploymentDevices`): the receipt path then finds each
 * device's row through (deployment_id, device_name) rather than reading the deployment whole for
 * every batch (the plan that follows from them is PostgreSQL's to choose, and at a test's size a
 * sequential scan is the right one: checked here are the statistics themselves, in pg_stats).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { SERVER_TUNING } from '../../../src/limits.js';
import { availableDrivers } from '../../helpers/store.js';
import { createReleaseFixture, newAuthorizer, releasePayload, sign, type ReleaseFixture } from '../../fixtures/release-flow.js';

describe.each(availableDrivers())('rollout start and planner statistics on %s', (driver) => {
  let f: ReleaseFixture;
  let arts: any[];
  let auth: ReturnType<typeof newAuthorizer>;
  let version = 0;
  const db = () => f.t.testStore.store.db;

  beforeAll(async () => {
    f = await createReleaseFixture(driver);
    arts = [(await f.upload({ name: 'st-conf', version: '1.0.0', kind: 'config', bytes: 'conf' })).body];
    auth = newAuthorizer();
    await f.api('POST', '/api/v1/authorizer-keys', { name: 'k', public_key_pem: auth.pem });
  }, 60_000);
  afterAll(async () => {
    await f?.dispose();
  });

  /** `n` online devices named `<prefix>NNNNN`, in one statement. */
  async function seed(prefix: string, n: number): Promise<void> {
    await sql`INSERT INTO devices (tenant_id, name, status, profile)
      SELECT ${f.t.tenantId}::uuid, ${prefix} || lpad(i::text, 5, '0'), 'online', 'linux-arm64'
      FROM generate_series(1, ${n}::int) AS i`.execute(db());
  }

  /** A signed release to a dynamic group of the devices named `<prefix>*`, started; its deployment id. */
  async function start(prefix: string): Promise<string> {
    const g = (await f.api('POST', '/api/v1/groups', { name: `g-${prefix}`, filter: `name ~ "${prefix}"` })).body;
    const env = sign(releasePayload({ tenant: f.t.tenantId, artifacts: arts, group: g, version: `1.0.${version++}` }), auth.key);
    const rel = await f.api('POST', '/api/v1/releases', { envelope: env, expected_product: 'edge-gateway' });
    expect(rel.status).toBe(201);
    const started = await f.api('POST', '/api/v1/rollouts', { release_id: rel.body.id });
    expect(started.status).toBe(201);
    return started.body.transaction_id as string;
  }

  /** The deployment ids the statistics of deployment_devices know by value. */
  async function knownDeployments(): Promise<string> {
    const { rows } = await sql<{ vals: string | null }>`
      SELECT most_common_vals::text AS vals FROM pg_stats
      WHERE schemaname = current_schema() AND tablename = 'deployment_devices' AND attname = 'deployment_id'`.execute(db());
    return rows[0]?.vals ?? '';
  }

  it(`a start assigning ${SERVER_TUNING.analyzeAfterAssignedDevices} devices or more refreshes them; a small one does not`, async () => {
    const n = SERVER_TUNING.analyzeAfterAssignedDevices;
    await seed('big-', n);
    const big = await start('big-');
    expect(await knownDeployments()).toContain(big);

    await seed('small-', 10);
    const small = await start('small-');
    expect(await knownDeployments()).not.toContain(small);
  }, 120_000);
});
