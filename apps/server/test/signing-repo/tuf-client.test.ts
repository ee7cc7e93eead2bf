/**
 * A real tuf-js 5 client (the one the agent uses) against the repository's HTTP routes on a
 * real port: the normal flow, root rotation, and the attacks the client must refuse.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { Updater } from 'tuf-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKey } from '../../src/signing-repo/index.js';
import { buildTimestamp, encodeMetadata } from '../../src/signing-repo/metadata.js';
import { tufExpires } from '../../src/signing-repo/expiry.js';
import { FsBlobStore } from '../../src/blobs/index.js';
import { specKeyId } from '../helpers/legacy-tuf-repo.js';
import { availableDrivers } from '../helpers/store.js';
import { createRepoFixture, serveRepo, type RepoFixture } from '../fixtures/signing-repo.js';

describe.each(availableDrivers())('tuf-js client against the signing repository on %s', (driver) => {
  let f: RepoFixture;
  let app: FastifyInstance;
  let base: string;
  const dirs: string[] = [];

  beforeAll(async () => {
    f = await createRepoFixture(driver);
    ({ app, base } = await serveRepo(f.repo));
  });
  afterAll(async () => {
    await app?.close();
    await f?.dispose();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  /** A device: a metadata dir provisioned with the tenant's root version 1. */
  async function device(tenant: string): Promise<{ metadataDir: string; targetDir: string; updater: () => Updater }> {
    const metadataDir = await mkdtemp(join(tmpdir(), 'svc-tuf-md-'));
    const targetDir = await mkdtemp(join(tmpdir(), 'svc-tuf-tg-'));
    dirs.push(metadataDir, targetDir);
    await writeFile(join(metadataDir, 'root.json'), (await f.repo.getMetadata(tenant, '1.root.json')).bytes);
    const updater = () =>
      new Updater({
        metadataDir,
        targetDir,
        metadataBaseUrl: `${base}/tuf/${tenant}/metadata`,
        targetBaseUrl: `${base}/tuf/${tenant}/targets`,
        config: { fetchRetries: 0, fetchTimeout: 5000 },
      });
    return { metadataDir, targetDir, updater };
  }

  async function publish(tenant: string, path: string, bytes: Buffer) {
    return f.repo.publishTargetStream(tenant, { path }, Readable.from([bytes]));
  }

  async function trustedVersion(metadataDir: string, role: string): Promise<number> {
    return JSON.parse(await readFile(join(metadataDir, `${role}.json`), 'utf8')).signed.version;
  }

  it('refreshes, finds and downloads targets (hash-verified, consistent snapshots)', async () => {
    const tenant = await f.newTenant();
    const fw = randomBytes(50_000);
    await publish(tenant, 'artifacts/fw/1.0/fw.bin', fw);
    const dev = await device(tenant);
    const u = dev.updater();
    await u.refresh();
    const info = await u.getTargetInfo('artifacts/fw/1.0/fw.bin');
    expect(info?.length).toBe(fw.length);
    const file = await u.downloadTarget(info!);
    expect((await readFile(file)).equals(fw)).toBe(true);
    expect(await u.getTargetInfo('artifacts/none')).toBeUndefined();

    // A later publish is seen by the same device; the old versioned files stay served.
    const cfg = Buffer.from('{"mode":"fast"}');
    await publish(tenant, 'configs/app.json', cfg);
    const u2 = dev.updater();
    await u2.refresh();
    const cfgInfo = await u2.getTargetInfo('configs/app.json');
    expect((await readFile(await u2.downloadTarget(cfgInfo!))).equals(cfg)).toBe(true);
    expect(await trustedVersion(dev.metadataDir, 'targets')).toBe(3);
    expect((await fetch(`${base}/tuf/${tenant}/metadata/2.targets.json`)).status).toBe(200);
  });

  it('follows a retirement: the re-signed chain verifies, the retired target is gone, the other stays', async () => {
    const tenant = await f.newTenant();
    const kept = randomBytes(1000);
    await publish(tenant, 'deltas/keep.zst', kept);
    await publish(tenant, 'deltas/retire.zst', randomBytes(1000));
    const dev = await device(tenant);
    const before = dev.updater();
    await before.refresh();
    expect(await before.getTargetInfo('deltas/retire.zst')).toBeDefined();

    const result = await f.t.store.db.transaction().execute((trx) => f.repo.retireTargets(trx, tenant, ['deltas/retire.zst']));
    expect(result.removed).toEqual(['deltas/retire.zst']);
    const after = dev.updater();
    await after.refresh();
    expect(await trustedVersion(dev.metadataDir, 'targets')).toBe(result.targetsVersion);
    expect(await after.getTargetInfo('deltas/retire.zst')).toBeUndefined();
    const info = await after.getTargetInfo('deltas/keep.zst');
    expect((await readFile(await after.downloadTarget(info!))).equals(kept)).toBe(true);
  });

  it('follows a root rotation signed by the old (offline) and the new root key', async () => {
    const tenant = await f.newTenant();
    await publish(tenant, 'a.bin', Buffer.from('a'));
    const dev = await device(tenant);
    await dev.updater().refresh();
    expect(await trustedVersion(dev.metadataDir, 'root')).toBe(1);

    // Offline custody: export, delete from the server, later rotate with it.
    const offline = await f.repo.exportRootKey(tenant);
    await f.repo.deleteRootKey(tenant);
    const next = generateSigningKey();
    await f.repo.rotateRoot(tenant, { newRootKeyPems: [next.pem], signWith: [offline] });
    const last = generateSigningKey();
    await f.repo.rotateRoot(tenant, { newRootKeyPems: [last.pem], signWith: [next.pem] });
    await publish(tenant, 'b.bin', Buffer.from('b'));

    const u = dev.updater();
    await u.refresh();
    expect(await trustedVersion(dev.metadataDir, 'root')).toBe(3);
    const trusted = JSON.parse(await readFile(join(dev.metadataDir, 'root.json'), 'utf8'));
    expect(trusted.signed.roles.root.keyids).toEqual([specKeyId(last.pem)]);
    expect(await u.getTargetInfo('b.bin')).toBeDefined();
  });

  it('refuses a root signed only by the new key (old root threshold not met)', async () => {
    const tenant = await f.newTenant();
    await f.repo.ensureTenantRepo(tenant);
    const dev = await device(tenant);
    const rogue = generateSigningKey();
    // Forge root 2 with the rogue key as root key, signed only by itself, straight into the table.
    const { buildRoot, signWith } = await import('../../src/signing-repo/metadata.js');
    const online = {
      targets: (await f.repo.keys.load(tenant, 'targets'))!,
      snapshot: (await f.repo.keys.load(tenant, 'snapshot'))!,
      timestamp: (await f.repo.keys.load(tenant, 'timestamp'))!,
    };
    const forged = buildRoot({ version: 2, now: new Date(), rootKeys: [rogue], rootThreshold: 1, online });
    signWith(forged, [rogue]);
    await f.db
      .insertInto('tuf_metadata')
      .values({ tenant_id: tenant, role: 'root', version: 2, bytes: encodeMetadata(forged), expires_at: tufExpires(new Date(), 'root') })
      .execute();
    await expect(dev.updater().refresh()).rejects.toThrow(/root was signed by 0\/1 keys/);
  });

  it('refuses a timestamp rollback (older version than it trusts)', async () => {
    const tenant = await f.newTenant();
    await publish(tenant, 'a.bin', Buffer.from('a'));
    await publish(tenant, 'b.bin', Buffer.from('b'));
    const dev = await device(tenant);
    await dev.updater().refresh();
    expect(await trustedVersion(dev.metadataDir, 'timestamp')).toBe(3);
    // The server (compromised mirror, stale replica) now serves timestamp 2.
    await f.db.deleteFrom('tuf_metadata').where('tenant_id', '=', tenant).where('role', '=', 'timestamp').where('version', '=', 3).execute();
    expect(JSON.parse((await f.repo.getMetadata(tenant, 'timestamp.json')).bytes.toString()).signed.version).toBe(2);
    await expect(dev.updater().refresh()).rejects.toThrow(/New timestamp version 2 is less than current version 3/);
  });

  it('refuses a snapshot rollback (a validly signed timestamp pointing at an older snapshot)', async () => {
    const tenant = await f.newTenant();
    await publish(tenant, 'a.bin', Buffer.from('a'));
    await publish(tenant, 'b.bin', Buffer.from('b'));
    const dev = await device(tenant);
    await dev.updater().refresh();
    expect(await trustedVersion(dev.metadataDir, 'snapshot')).toBe(3);
    // Even with the real timestamp key, pointing at snapshot 2 must be refused.
    const tsKey = (await f.repo.keys.load(tenant, 'timestamp'))!;
    const old = await f.repo.getMetadata(tenant, '2.snapshot.json');
    const forged = buildTimestamp(4, new Date(), { version: 2, bytes: old.bytes }, tsKey);
    await f.db
      .insertInto('tuf_metadata')
      .values({ tenant_id: tenant, role: 'timestamp', version: 4, bytes: encodeMetadata(forged), expires_at: tufExpires(new Date(), 'timestamp') })
      .execute();
    await expect(dev.updater().refresh()).rejects.toThrow(/New snapshot version 2 is less than current version 3/);
  });

  it('refuses a frozen repository (expired timestamp)', async () => {
    const tenant = await f.newTenant();
    const saved = f.clock.now;
    try {
      // Everything signed two days ago and never refreshed since: the timestamp (1 day) is expired.
      f.clock.now = new Date(Date.now() - 2 * 24 * 3600_000);
      await publish(tenant, 'a.bin', Buffer.from('a'));
    } finally {
      f.clock.now = saved;
    }
    const dev = await device(tenant);
    await expect(dev.updater().refresh()).rejects.toThrow(/timestamp.json is expired/);
    // The refresh job fixes it: timestamp re-signed, the device proceeds.
    expect((await f.repo.refreshIfDue(tenant, new Date())).refreshed).toContain('timestamp');
    await dev.updater().refresh();
  });

  it('refuses tampered target bytes (hash mismatch)', async () => {
    const tenant = await f.newTenant();
    const original = randomBytes(4096);
    const published = await publish(tenant, 'artifacts/model/1/model.onnx', original);
    const dev = await device(tenant);
    const u = dev.updater();
    await u.refresh();
    const info = await u.getTargetInfo('artifacts/model/1/model.onnx');
    // Someone with disk access swaps the bytes (same length).
    const path = (f.repo.blobs as FsBlobStore).pathOf(published.digest);
    await chmod(path, 0o644);
    await writeFile(path, randomBytes(4096));
    await expect(u.downloadTarget(info!)).rejects.toThrow(/Expected hash/);
  });

  it('refuses metadata signed by a key the root does not name', async () => {
    const tenant = await f.newTenant();
    await publish(tenant, 'a.bin', Buffer.from('a'));
    const dev = await device(tenant);
    await dev.updater().refresh();
    const snap = await f.repo.getMetadata(tenant, '2.snapshot.json');
    const forged = buildTimestamp(3, new Date(), { version: 2, bytes: snap.bytes }, generateSigningKey());
    await f.db
      .insertInto('tuf_metadata')
      .values({ tenant_id: tenant, role: 'timestamp', version: 3, bytes: encodeMetadata(forged), expires_at: tufExpires(new Date(), 'timestamp') })
      .execute();
    await expect(dev.updater().refresh()).rejects.toThrow(/timestamp was signed by 0\/1 keys/);
  });
});
