import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import { requireTool } from '../../../../../vitest.shared.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deltaTargetPath, digestFromHex, type Digest } from '@svc/release-core';
import { runDeltaBuilds } from '../../../src/jobs/delta-builds.js';
import { runDeltaGc } from '../../../src/jobs/delta-gc.js';
import { collectBlobGarbage } from '../../../src/blobs/index.js';
import { FsBlobStore } from '../../../src/blobs/fs-blob-store.js';
import { buildDelta } from '../../../src/resources/deltas/builder.js';
import { SERVER_TUNING } from '../../../src/limits.js';
import { availableDrivers } from '../../helpers/store.js';
import { TUF_CLIENTS } from '../../helpers/tuf-clients.js';
import { createReleaseFixture, newAuthorizer, releasePayload, sign, type ReleaseFixture } from '../../fixtures/release-flow.js';

const sha = (b: Uint8Array) => digestFromHex(createHash('sha256').update(b).digest('hex'));

const haveZstd = requireTool('zstd');

/** A 512 KiB model and two later versions, each with a few 4 KiB blocks changed. */
function modelVersions(): Buffer[] {
  const v0 = randomBytes(512 * 1024);
  const v1 = Buffer.from(v0);
  for (const b of [3, 50, 90]) randomBytes(4096).copy(v1, b * 4096);
  const v2 = Buffer.from(v1);
  for (const b of [10, 70, 120]) randomBytes(4096).copy(v2, b * 4096);
  return [v0, v1, v2];
}

describe.skipIf(!haveZstd).each(availableDrivers())('deltas of file and container members on %s', (driver) => {
  let f: ReleaseFixture;
  let tenant: string;
  let base: string;
  let work: string;
  const publish = (t: string, entry: Parameters<ReleaseFixture['repo']['publishTargets']>[1][number]) =>
    f.repo.publishTargets(t, [entry], { immutable: true }).then(() => undefined);
  beforeAll(async () => {
    f = await createReleaseFixture(driver);
    tenant = f.t.tenantId;
    for (const d of ['dev-a', 'dev-b', 'dev-c', 'dev-d']) await f.device(d);
    await f.t.app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(f.t.app.server.address() as AddressInfo).port}/api/v1/tuf`;
    work = await mkdtemp(join(f.dataDir, 'work-'));
    const auth = newAuthorizer();
    expect((await f.api('POST', '/api/v1/authorizer-keys', { name: 'release-signing', public_key_pem: auth.pem })).status).toBe(201);
    keys.auth = auth;
  });
  afterAll(async () => {
    await f?.dispose();
  });
  const keys: { auth?: ReturnType<typeof newAuthorizer> } = {};

  /** What a device reports as installed (docs/inventory.md `members`). */
  const runs = (device: string, digest: string, version: string, component = 'detector') =>
    sql`UPDATE devices SET inventory = ${JSON.stringify({ attributes: {}, custom: {}, members: [{ component, version, digest }] })}::jsonb
        WHERE tenant_id = ${tenant} AND name = ${device}`.execute(f.t.testStore.store.db);

  async function release(version: string, artifact: Record<string, unknown>, group: { id: string; snapshot_digest: string }) {
    const env = sign(releasePayload({ tenant, artifacts: [artifact as never], group, version }), keys.auth!.key);
    const rel = await f.api('POST', '/api/v1/releases', { envelope: env, expected_product: 'edge-gateway' });
    expect(rel.status, JSON.stringify(rel.body)).toBe(201);
    const ro = await f.api('POST', '/api/v1/rollouts', { release_id: rel.body.id });
    expect(ro.status, JSON.stringify(ro.body)).toBe(201);
    return ro.body as { id: string; transaction_id: string };
  }

  it('plans deltas at rollout start from what the devices run, builds them in the background, serves them as signed TUF targets and reuses them', async () => {
    const [v0, v1, v2] = modelVersions() as [Buffer, Buffer, Buffer];
    const up = async (version: string, bytes: Buffer) => {
      const r = await f.upload({ name: 'detector', version, kind: 'model', bytes, filename: 'detector.onnx' });
      expect(r.status).toBe(201);
      return r.body as { id: string; digest: string; length: number; target: string };
    };
    const [a0, a1, a2] = [await up('1.0.0', v0), await up('1.1.0', v1), await up('1.2.0', v2)];
    // two devices run 1.1.0, one runs 1.0.0 (and one the new version already: nothing to do for it)
    await runs('dev-a', a1.digest, '1.1.0');
    await runs('dev-b', a1.digest, '1.1.0');
    await runs('dev-c', a0.digest, '1.0.0');
    await runs('dev-d', a2.digest, '1.2.0');
    const group = (await f.api('POST', '/api/v1/groups', { name: 'field', members: ['dev-a', 'dev-b', 'dev-c', 'dev-d'] })).body;
    const ro = await release('2.0.0', a2, group);

    // planned in the start's transaction: most common source first, nothing built yet
    const planned = await f.api('GET', `/api/v1/rollouts/${ro.id}/delivery`);
    expect(planned.status).toBe(200);
    expect(planned.body.deltas).toMatchObject({ queued: 2, building: 0, ready: 0, skipped: 0, failed: 0 });
    expect(planned.body.deltas.items.map((d: { source_digest: string; devices: number; state: string }) => [d.source_digest, d.devices, d.state])).toEqual([
      [a1.digest, 2, 'queued'],
      [a0.digest, 1, 'queued'],
    ]);
    expect(planned.body).toMatchObject({ totals: [], deliveries: [], deliveries_total: 0 });
    // a device's deliveries: none reported yet; an unknown device is 404
    expect(await f.api('GET', '/api/v1/devices/dev-a/deliveries')).toMatchObject({ status: 200, body: { device: 'dev-a', members: [] } });
    expect((await f.api('GET', '/api/v1/devices/no-such-device/deliveries')).status).toBe(404);

    // the background job: both built, published, and their progress visible
    expect(await runDeltaBuilds(f.t.testStore.store.db, { blobs: f.repo.blobs, publish, workDir: work }, f.t.clock.now)).toBe(2);
    const built = (await f.api('GET', `/api/v1/rollouts/${ro.id}/delivery`)).body;
    expect(built.deltas).toMatchObject({ queued: 0, ready: 2, failed: 0 });
    for (const [src, bytes] of [
      [a1.digest, v1],
      [a0.digest, v0],
    ] as const) {
      const item = built.deltas.items.find((d: { source_digest: string }) => d.source_digest === src);
      expect(item).toMatchObject({ state: 'ready', target: deltaTargetPath(src as Digest, a2.digest as Digest), full_length: v2.length, error: null });
      expect(item.length).toBeLessThan(v2.length / 10);
      // the signed targets metadata lists it with its own length and hash and the pair it joins
      const info = await f.repo.getTargetInfo(tenant, item.target);
      expect(info).toMatchObject({
        length: item.length,
        custom: {
          media_type: 'application/zstd',
          delta: { format: 'zstd-patch-from', source_digest: src, target_digest: a2.digest, target_length: v2.length },
        },
      });
      // a real TUF client downloads it (metadata signatures, length and sha256 checked) and it rebuilds the new version
      const client = TUF_CLIENTS[0]!;
      const headers = await f.t.apiKeyHeaders('viewer');
      const metadataDir = await mkdtemp(join(work, 'md-'));
      const targetDir = await mkdtemp(join(work, 'tg-'));
      const root = await fetch(`${base}/${tenant}/metadata/1.root.json`, { headers });
      await writeFile(join(metadataDir, 'root.json'), Buffer.from(await root.arrayBuffer()));
      const c = client.open({ metadataDir, targetDir, metadataBaseUrl: `${base}/${tenant}/metadata`, targetBaseUrl: `${base}/${tenant}/targets` }, headers);
      const delta = await c.fetchTarget(item.target);
      expect(delta?.length).toBe(item.length);
      await writeFile(join(work, 'src'), bytes);
      await writeFile(join(work, 'delta'), delta!);
      execFileSync('zstd', [
        '-q',
        '-f',
        '-d',
        '--long=27',
        '--memory=128MB',
        `--patch-from=${join(work, 'src')}`,
        join(work, 'delta'),
        '-o',
        join(work, 'out'),
      ]);
      expect((await readFile(join(work, 'out'))).equals(v2)).toBe(true);
    }
    // the builds are audited
    const audit = await f.api('GET', '/api/v1/audit?action=delta.ready');
    expect(audit.body.total).toBe(2);
    expect((await f.api('GET', '/api/v1/audit?action=rollout.deltas')).body.total).toBe(1);

    // a later rollout between the same versions reuses the deltas: nothing new to build
    const again = await release('2.0.1', a2, group);
    const reused = (await f.api('GET', `/api/v1/rollouts/${again.id}/delivery`)).body;
    expect(reused.deltas).toMatchObject({ queued: 0, ready: 2 });
    expect(reused.deltas.items.map((d: { target: string }) => d.target).sort()).toEqual(built.deltas.items.map((d: { target: string }) => d.target).sort());
    expect(await runDeltaBuilds(f.t.testStore.store.db, { blobs: f.repo.blobs, publish, workDir: work }, f.t.clock.now)).toBe(0);

    expect((await f.api('GET', '/api/v1/rollouts/not-a-uuid/delivery')).status).toBe(404);
  });

  it('bounds a build in time and refuses to publish when zstd cannot run; too large a delta is skipped', async () => {
    const [v0, v1] = modelVersions() as [Buffer, Buffer];
    const s = await f.repo.blobs.put(Readable.from([v0]));
    const t = await f.repo.blobs.put(Readable.from([v1]));
    const d = { tenant_id: tenant, source_digest: s.digest, target_digest: t.digest, source_length: s.length, target_length: t.length };
    const deps = { blobs: f.repo.blobs, publish, workDir: work };
    expect(await buildDelta({ ...deps, zstd: join(work, 'no-such-zstd') }, d)).toMatchObject({
      state: 'failed',
      error: expect.stringMatching(/zstd could not run/),
    });
    expect(await buildDelta({ ...deps, timeoutMs: 1 }, d)).toMatchObject({ state: 'failed', error: expect.stringMatching(/longer than 1 ms/) });
    // unrelated bytes: the delta is as large as the member
    const other = await f.repo.blobs.put(Readable.from([randomBytes(v1.length)]));
    expect(await buildDelta(deps, { ...d, target_digest: other.digest })).toMatchObject({
      state: 'skipped',
      error: expect.stringMatching(new RegExp(`over ${SERVER_TUNING.deltaMaxRatio * 100}%`)),
    });
    // a source the store does not hold
    expect(await buildDelta(deps, { ...d, source_digest: sha(Buffer.from('gone')) })).toMatchObject({
      state: 'skipped',
      error: expect.stringMatching(/not stored/),
    });
    // nothing of these was published
    expect((await f.repo.listTargets(tenant)).filter((x) => x.path === deltaTargetPath(s.digest, t.digest))).toEqual([]);
  });

  it('retires deltas no running rollout uses, and at once those whose source is gone; the blob collector then takes their blobs', async () => {
    const db = f.t.testStore.store.db;
    const [v0, v1, v2] = modelVersions() as [Buffer, Buffer, Buffer];
    const up = async (version: string, bytes: Buffer) => {
      const r = await f.upload({ name: 'classifier', version, kind: 'model', bytes, filename: 'classifier.onnx' });
      expect(r.status).toBe(201);
      return r.body as { id: string; digest: string; length: number; target: string };
    };
    const [a0, a1, a2] = [await up('1.0.0', v0), await up('1.1.0', v1), await up('1.2.0', v2)];
    await runs('dev-a', a0.digest, '1.0.0', 'classifier');
    await runs('dev-b', a1.digest, '1.1.0', 'classifier');
    const group = (await f.api('POST', '/api/v1/groups', { name: 'gc-field', members: ['dev-a', 'dev-b'] })).body;
    const ro = await release('3.0.0', a2, group);
    const deps = { blobs: f.repo.blobs, publish, workDir: work };
    expect(await runDeltaBuilds(db, deps, f.t.clock.now)).toBe(2);
    const items = (await f.api('GET', `/api/v1/rollouts/${ro.id}/delivery`)).body.deltas.items as { source_digest: string; target: string; state: string }[];
    expect(items.map((d) => d.state)).toEqual(['ready', 'ready']);
    const byStore = async (target: string) => (await f.repo.listTargets(tenant)).find((x) => x.path === target);
    const fromA0 = items.find((d) => d.source_digest === a0.digest)!;
    const fromA1 = items.find((d) => d.source_digest === a1.digest)!;
    const deltaDigests = await Promise.all([fromA0, fromA1].map(async (d) => (await byStore(d.target))!.digest));
    const gcDeps = { blobs: f.repo.blobs, retireTargets: f.repo.retireTargets.bind(f.repo) };
    const later = (ms: number) => () => new Date(f.t.clock.now().getTime() + ms);
    const rowsOf = async () =>
      (
        await sql<{ source_digest: string }>`SELECT source_digest FROM member_deltas WHERE tenant_id = ${tenant} AND target_digest = ${a2.digest}`.execute(db)
      ).rows
        .map((r) => r.source_digest)
        .sort();
    const filesOf = async (path: string) =>
      Number(
        (await sql<{ n: number | string }>`SELECT count(*) AS n FROM tuf_target_files WHERE tenant_id = ${tenant} AND path = ${path}`.execute(db)).rows[0]!.n,
      );

    // the source of one delta leaves the blob store (as when its artifact's blob is collected)
    if (f.repo.blobs instanceof FsBlobStore) await rm(f.repo.blobs.pathOf(a0.digest as Digest));
    else await sql`DELETE FROM blobs WHERE digest = ${a0.digest}`.execute(db);
    expect(await f.repo.blobs.has(a0.digest as Digest)).toBe(false);

    // the rollout still runs: nothing goes, even past the grace period and with the source gone
    expect(await runDeltaGc(db, gcDeps, later(SERVER_TUNING.deltaRetireAfterMs + 60_000))).toBe(0);
    expect(await rowsOf()).toEqual([a0.digest, a1.digest].sort());

    // aborted: the delta whose source is gone is retired at once, the other kept for the grace period
    expect((await f.api('POST', `/api/v1/rollouts/${ro.id}/abort`)).status).toBe(200);
    expect(await runDeltaGc(db, gcDeps, f.t.clock.now)).toBe(1);
    expect(await rowsOf()).toEqual([a1.digest]);
    expect(await byStore(fromA0.target)).toBeUndefined();
    expect(await filesOf(fromA0.target)).toBe(0);
    expect(await byStore(fromA1.target)).toBeDefined();
    expect(await filesOf(fromA1.target)).toBe(1);
    // the rollout's view no longer lists it; the audit trail says why it went
    expect((await f.api('GET', `/api/v1/rollouts/${ro.id}/delivery`)).body.deltas.items.map((d: { source_digest: string }) => d.source_digest)).toEqual([
      a1.digest,
    ]);
    const audit = (await f.api('GET', '/api/v1/audit?action=delta.retired')).body;
    expect(audit.events.map((e: { detail: Record<string, unknown> }) => e.detail)).toEqual([
      expect.objectContaining({
        source_digest: a0.digest,
        target_digest: a2.digest,
        state: 'ready',
        reason: 'source-gone',
        target: fromA0.target,
        delta_digest: deltaDigests[0],
      }),
    ]);
    expect(await runDeltaGc(db, gcDeps, f.t.clock.now)).toBe(0);

    // past the grace period, the unused one goes too
    expect(await runDeltaGc(db, gcDeps, later(SERVER_TUNING.deltaRetireAfterMs + 60_000))).toBe(1);
    expect(await rowsOf()).toEqual([]);
    expect(await byStore(fromA1.target)).toBeUndefined();
    expect(await filesOf(fromA1.target)).toBe(0);
    expect((await f.api('GET', '/api/v1/audit?action=delta.retired')).body.events[0].detail).toMatchObject({ source_digest: a1.digest, reason: 'unused' });

    if (driver === 'postgres') {
      // the database blob store: no committed row names the delta blobs any more, so the collector takes them; the members stay
      const collected = (await collectBlobGarbage(db, { asOf: new Date(Date.now() + 2 * 3600_000) })).deleted.map((b) => b.digest);
      for (const d of deltaDigests) expect(collected).toContain(d);
      expect(await f.repo.blobs.has(a1.digest as Digest)).toBe(true);
      expect(await f.repo.blobs.has(a2.digest as Digest)).toBe(true);
    }

    // a later rollout between the same versions asks for the deltas again: the one whose
    // source is still stored is built anew (the same bytes), the other is skipped
    const again = await release('3.0.1', a2, group);
    expect((await f.api('GET', `/api/v1/rollouts/${again.id}/delivery`)).body.deltas).toMatchObject({ queued: 2 });
    expect(await runDeltaBuilds(db, deps, f.t.clock.now)).toBe(2);
    expect((await f.api('GET', `/api/v1/rollouts/${again.id}/delivery`)).body.deltas).toMatchObject({ ready: 1, skipped: 1 });
    expect(await byStore(fromA1.target)).toMatchObject({ digest: deltaDigests[1] });
  });
  it('plans and builds a delta for a container member (its image archive) from what the devices run', async () => {
    // two archive versions sharing all but one "layer" of 64 KiB
    const v1 = randomBytes(512 * 1024);
    const v2 = Buffer.from(v1);
    randomBytes(64 * 1024).copy(v2, 128 * 1024);
    const up = async (version: string, bytes: Buffer) => {
      const r = await f.upload({
        name: 'web',
        version,
        kind: 'container',
        bytes,
        filename: 'web.docker-archive.tar',
        media_type: 'application/x-docker-archive',
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body as { id: string; digest: string; length: number; target: string; kind: string };
    };
    const [c1, c2] = [await up('1.0.0', v1), await up('2.0.0', v2)];
    expect(c2.kind).toBe('container');
    await runs('dev-c', c1.digest, '1.0.0', 'web');
    const group = (await f.api('POST', '/api/v1/groups', { name: 'containers', members: ['dev-c'] })).body;
    const ro = await release('5.0.0', c2, group);
    const planned = (await f.api('GET', `/api/v1/rollouts/${ro.id}/delivery`)).body;
    expect(planned.deltas.items.map((d: { source_digest: string; devices: number; state: string }) => [d.source_digest, d.devices, d.state])).toEqual([
      [c1.digest, 1, 'queued'],
    ]);
    expect(await runDeltaBuilds(f.t.testStore.store.db, { blobs: f.repo.blobs, publish, workDir: work }, f.t.clock.now)).toBe(1);
    const [item] = (await f.api('GET', `/api/v1/rollouts/${ro.id}/delivery`)).body.deltas.items;
    expect(item).toMatchObject({ state: 'ready', target: deltaTargetPath(c1.digest as Digest, c2.digest as Digest), full_length: v2.length });
    expect(item.length).toBeLessThan(v2.length / 4);
  });
});
