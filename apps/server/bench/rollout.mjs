// Rollout-start and artifact-upload benchmark (apps/server/bench/rollout.mjs), from dist.
//
//   node bench/rollout.mjs [--devices 100000] [--upload-mib 128]
//
// 1. Rollout start over a group of N devices (default 100k), end to end through the pipeline:
//    re-verify the signed release, recompute the group snapshot digest from the members, check
//    artifacts and device compatibility, insert deployment, rollouts, waves and N device rows.
//    Baseline: a bare INSERT ... SELECT of the same N member rows into a table of the same shape,
//    in the same database. Printed as a ratio (lower is better; 1.0 = as fast as the bare copy).
// 2. Artifact upload throughput: the pipeline's streaming put into the blob store (hashing on the
//    way) plus TUF publish and record insert, vs `cp` of the same file. Printed as a ratio.
// Runs on the embedded database, and on PostgreSQL too when SVC_BENCH_DATABASE_URL is set.
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { generateKeyPair, signRelease } from '@svc/release-core';
import { openStore } from '../dist/store/open.js';
import { migrateToLatest } from '../dist/store/migrate.js';
import { SigningRepository } from '../dist/signing-repo/index.js';
import { registerAuthorizerKey } from '../dist/resources/authorizer-keys/commands.js';
import { recordPublishedArtifact } from '../dist/resources/artifacts/commands.js';
import { checkArtifactFields } from '../dist/resources/artifacts/fields.js';
import { publishArtifactTarget, storeArtifactBytes } from '../dist/resources/artifacts/publication.js';
import { computeSnapshotDigest } from '../dist/resources/groups/snapshot.js';
import { prepareRelease, publishRelease } from '../dist/resources/releases/commands.js';
import { startSignedRollout } from '../dist/resources/rollouts/commands.js';
import { runUnitOfWork, systemActor } from '../dist/resources/unit-of-work.js';

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const DEVICES = arg('devices', 100_000);
const UPLOAD_MIB = arg('upload-mib', 128);
const ms = (t) => `${t.toFixed(0)} ms`;

async function timed(fn) {
  const t0 = performance.now();
  const r = await fn();
  return [performance.now() - t0, r];
}

async function run(label, storeOpts) {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-rollout-'));
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const store = await openStore({ ...storeOpts, schema });
  try {
    await migrateToLatest(store);
    const db = store.db;
    const tenant = randomUUID();
    await sql`INSERT INTO tenants (id, name, is_default) VALUES (${tenant}, 'bench', false)`.execute(db);
    const now = new Date();
    const repo = new SigningRepository({ db, dataDir, clock: () => new Date() });
    await repo.ensureTenantRepo(tenant);
    const deps = { db, blobs: repo.blobs, publishTargets: (t, e, o) => repo.publishTargets(t, e, o), clock: () => new Date() };
    const command = (cmd, input) => runUnitOfWork(db, { tenant, actor: systemActor('bench'), now: new Date() }, (uow) => cmd(uow, input));
    // what POST /artifacts does: signed target first, then the record and its audit row
    const publish = async (bytes, fields) =>
      command(recordPublishedArtifact, await publishArtifactTarget(deps, tenant, checkArtifactFields(fields), await storeArtifactBytes(deps, bytes)));

    // fleet and group (setup, not timed)
    await sql`INSERT INTO devices (tenant_id, name, status, profile) SELECT ${tenant}::uuid, 'dev-' || lpad(i::text, 7, '0'), 'online', 'linux-arm64' FROM generate_series(1, ${DEVICES}) i`.execute(
      db,
    );
    const g =
      await sql`INSERT INTO device_groups (tenant_id, name, snapshot_digest, created_at, updated_at) VALUES (${tenant}, 'all', 'x', ${now}, ${now}) RETURNING id`.execute(
        db,
      );
    const groupId = g.rows[0].id;
    await sql`INSERT INTO device_group_members (group_id, tenant_id, device_name) SELECT ${groupId}::uuid, tenant_id, name FROM devices WHERE tenant_id = ${tenant}`.execute(
      db,
    );
    const snap = await computeSnapshotDigest(db, tenant, groupId);
    await sql`UPDATE device_groups SET snapshot_digest = ${snap.digest}, member_count = ${snap.count} WHERE id = ${groupId}`.execute(db);

    // upload: pipeline streaming publish vs cp of the same file
    const file = join(dataDir, 'payload.bin');
    const fh = await open(file, 'w');
    const chunk = randomBytes(1024 * 1024);
    for (let i = 0; i < UPLOAD_MIB; i++) await fh.write(chunk);
    await fh.close();
    const [tCp] = await timed(async () => {
      const r = spawnSync('cp', [file, join(dataDir, 'copy.bin')]);
      if (r.status !== 0) throw new Error(`cp failed: ${r.stderr}`);
    });
    const [tUp, big] = await timed(() => publish(createReadStream(file), { name: 'big', version: '1.0.0', kind: 'model', filename: 'big.bin' }));

    // a two-component signed release over the whole group
    const { Readable } = await import('node:stream');
    const small = await publish(Readable.from([Buffer.from('conf')]), { name: 'conf', version: '1.0.0', kind: 'config', filename: 'conf.bin' });
    const key = generateKeyPair('ed25519');
    await command(registerAuthorizerKey, { name: 'bench', public_key_pem: key.publicKey.pem });
    const components = [small, big].map((a) => ({
      name: a.name,
      kind: a.kind,
      artifact: { id: a.id, name: a.name, version: a.version },
      target: a.target,
      digest: a.digest,
      length: a.length,
      media_type: a.media_type,
      placement: { path: `/var/lib/bench/${a.name}`, mode: '0644' },
    }));
    const payload = {
      tenant,
      product: 'bench',
      release: { version: '1.0.0' },
      components,
      targets: Object.fromEntries(components.map((c) => [c.target, { length: c.length, hashes: { sha256: c.digest.slice(7) } }])),
      compatibility: { profiles: ['linux-arm64'] },
      activation: { ordered_groups: [['conf'], ['big']] },
      health: { probes: [{ name: 'up', type: 'command', command: ['/bin/true'], timeout_s: 5 }], timeout_s: 60 },
      rollout: {
        target_group: groupId,
        target_policy_digest: snap.digest,
        waves: [{ percent: 1 }, { percent: 10, requires_approval: true }, { percent: 100 }],
        failure_threshold: { percent: 5 },
      },
      approvals: [],
      recovery: { on_failure: 'rollback', rollback_boundary: 'release' },
      attestations: [],
      validity: { not_before: '2020-01-01T00:00:00Z', not_after: '2099-01-01T00:00:00Z', max_offline_age_s: 86400 },
    };
    const prepared = await prepareRelease(deps, tenant, { envelope: signRelease(payload, key), expected_product: 'bench' });
    const asBench = (fn) => runUnitOfWork(db, { tenant, actor: systemActor('bench'), now: new Date() }, fn);
    const { release } = await asBench((uow) => publishRelease(uow, prepared.record));

    const [tStart, started] = await timed(() => asBench((uow) => startSignedRollout(uow, { releaseId: release.id })));
    const rows = await sql`SELECT count(*)::int AS n FROM deployment_devices WHERE deployment_id = ${started.deployment_id}`.execute(db);
    if (rows.rows[0].n !== DEVICES) throw new Error(`expected ${DEVICES} device rows, got ${rows.rows[0].n}`);

    await sql`CREATE TABLE bench_copy (deployment_id uuid NOT NULL, tenant_id uuid NOT NULL, device_name text NOT NULL, wave_idx integer NOT NULL, state text NOT NULL DEFAULT 'pending', PRIMARY KEY (deployment_id, device_name))`.execute(
      db,
    );
    const [tBase] = await timed(() =>
      sql`INSERT INTO bench_copy (deployment_id, tenant_id, device_name, wave_idx) SELECT ${randomUUID()}::uuid, tenant_id, device_name, 0 FROM device_group_members WHERE group_id = ${groupId}`.execute(
        db,
      ),
    );

    const mib = UPLOAD_MIB;
    console.log(
      `[${label}] rollout start, ${DEVICES} devices (verify + snapshot digest + waves + device rows): ${ms(tStart)}; bare INSERT ... SELECT of ${DEVICES} rows: ${ms(tBase)}; ratio ${(tStart / tBase).toFixed(2)}x`,
    );
    console.log(
      `[${label}] artifact upload ${mib} MiB (stream + sha256 + TUF publish + record): ${ms(tUp)} (${(mib / (tUp / 1000)).toFixed(0)} MiB/s); cp: ${ms(tCp)} (${(mib / (tCp / 1000)).toFixed(0)} MiB/s); ratio ${(tUp / tCp).toFixed(2)}x`,
    );
  } finally {
    if (store.driver === 'postgres')
      await sql
        .raw(`DROP SCHEMA "${schema}" CASCADE`)
        .execute(store.db)
        .catch(() => {});
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

const t0 = performance.now();
await run('embedded', {});
const pg = process.env.SVC_BENCH_DATABASE_URL;
if (pg) await run('postgresql', { databaseUrl: pg });
else console.log('[postgresql] skipped: set SVC_BENCH_DATABASE_URL=postgres://... to run it');
console.log(`rollout bench done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
