import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { availableDrivers, createTestStore, type TestStore } from '../helpers/store.js';

// spec §2.3 rule 5 / 3.7: receipts are append-only, enforced by the DATABASE, not just by the code paths
describe.each(availableDrivers())('pipeline tables on %s', (driver) => {
  let t: TestStore;
  beforeAll(async () => {
    t = await createTestStore(driver);
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it('release_receipts and legacy_status_reports refuse UPDATE and DELETE from raw SQL', async () => {
    const db = t.store.db;
    const tenant = randomUUID();
    await sql`INSERT INTO tenants (id, name, is_default) VALUES (${tenant}, 'x', false)`.execute(db);
    const now = new Date();
    const [g] = await sql<{ id: string }>`INSERT INTO device_groups (tenant_id, name, snapshot_digest, created_at, updated_at)
      VALUES (${tenant}, 'g', 'sha256:00', ${now}, ${now}) RETURNING id`
      .execute(db)
      .then((r) => r.rows);
    const [a] = await sql<{
      id: string;
    }>`INSERT INTO artifacts (tenant_id, name, version, kind, media_type, filename, digest, length, target, created_at, updated_at)
      VALUES (${tenant}, 'a', '1', 'model', 'application/octet-stream', 'f', 'sha256:00', 1, 't', ${now}, ${now}) RETURNING id`
      .execute(db)
      .then((r) => r.rows);
    const [r] = await sql<{
      id: string;
    }>`INSERT INTO releases (tenant_id, product, version, payload_digest, envelope_digest, keyid, target, envelope_bytes, created_at)
      VALUES (${tenant}, 'p', '1', 'x', 'y', 'k', 't', ${Buffer.from('{}')}, ${now}) RETURNING id`
      .execute(db)
      .then((r) => r.rows);
    const [d] = await sql<{
      id: string;
    }>`INSERT INTO deployments (tenant_id, kind, release_id, group_id, snapshot_digest, member_count, device_count, created_at)
      VALUES (${tenant}, 'signed', ${r!.id}, ${g!.id}, 'sha256:00', 1, 1, ${now}) RETURNING id`
      .execute(db)
      .then((r) => r.rows);
    const [ro] = await sql<{
      id: string;
    }>`INSERT INTO rollouts (tenant_id, deployment_id, kind, release_id, artifact_id, component, group_index, position, created_at)
      VALUES (${tenant}, ${d!.id}, 'signed', ${r!.id}, ${a!.id}, 'c', 0, 0, ${now}) RETURNING id`
      .execute(db)
      .then((r) => r.rows);
    await sql`INSERT INTO release_receipts (tenant_id, deployment_id, release_id, rollout_id, device_name, activation, health, payload_digest, envelope_digest, envelope_bytes, payload, accepted_at)
      VALUES (${tenant}, ${d!.id}, ${r!.id}, ${ro!.id}, 'dev', 'activated', 'healthy', 'p', 'e', ${Buffer.from('{}')}, '{}', ${now})`.execute(db);
    await sql`INSERT INTO legacy_status_reports (tenant_id, deployment_id, rollout_id, device_name, status, reported_at)
      VALUES (${tenant}, ${d!.id}, ${ro!.id}, 'dev', 'installed', ${now})`.execute(db);

    await expect(sql`UPDATE release_receipts SET activation = 'failed'`.execute(db)).rejects.toThrow(/append-only: UPDATE refused/);
    await expect(sql`DELETE FROM release_receipts`.execute(db)).rejects.toThrow(/append-only: DELETE refused/);
    await expect(sql`TRUNCATE release_receipts CASCADE`.execute(db)).rejects.toThrow(/append-only: TRUNCATE refused/);
    await expect(sql`UPDATE legacy_status_reports SET status = 'failed'`.execute(db)).rejects.toThrow(/append-only/);
    await expect(sql`DELETE FROM legacy_status_reports`.execute(db)).rejects.toThrow(/append-only/);
    const rows = await sql<{ activation: string }>`SELECT activation FROM release_receipts`.execute(db);
    expect(rows.rows).toEqual([{ activation: 'activated' }]);
    // identical envelope bytes cannot be stored twice (idempotent uploads rely on this)
    await expect(
      sql`INSERT INTO release_receipts (tenant_id, deployment_id, release_id, rollout_id, device_name, activation, health, payload_digest, envelope_digest, envelope_bytes, payload, accepted_at)
        VALUES (${tenant}, ${d!.id}, ${r!.id}, ${ro!.id}, 'dev', 'activated', 'healthy', 'p', 'e', ${Buffer.from('{}')}, '{}', ${now})`.execute(db),
    ).rejects.toThrow(/duplicate key/);
  });
});
