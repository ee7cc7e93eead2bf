import { importPlainKeyFiles } from '../../src/key-custody/import-plain-keys.js';
/**
 * Repositories whose metadata names keys by `sha256:` + SPKI ids move to the TUF
 * specification's key ids through a root rotation, and devices that pinned the old root
 * version 1 follow the chain (tuf-js 5 over HTTP on a real port).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { Updater } from 'tuf-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SigningRepoError, generateSigningKey } from '../../src/signing-repo/index.js';
import { writeLegacyRepo, specKeyId, type LegacyRepo } from '../helpers/legacy-tuf-repo.js';
import { availableDrivers } from '../helpers/store.js';
import { createRepoFixture, serveRepo, type RepoFixture } from '../fixtures/signing-repo.js';

interface MetadataJson {
  signatures: { keyid: string; sig: string }[];
  signed: { version: number; keys?: Record<string, { keyval: { public: string } }>; roles?: Record<string, { keyids: string[]; threshold: number }> };
}

describe.each(availableDrivers())('TUF key id upgrade of a legacy repository on %s', (driver) => {
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

  async function legacyTenant(targets: { path: string; bytes: Buffer }[] = []): Promise<{ tenant: string; legacy: LegacyRepo }> {
    const tenant = await f.newTenant();
    const legacy = await writeLegacyRepo(f.db, f.dataDir, tenant, { now: f.clock.now, targets });
    // its plain key files are wrapped as a server start does (key-custody/import-plain-keys.ts)
    expect((await importPlainKeyFiles(f.repo.wrappedKeys, f.dataDir)).conflicts).toEqual([]);
    return { tenant, legacy };
  }

  /** A device provisioned with the tenant's root version 1. */
  async function device(tenant: string): Promise<{ metadataDir: string; updater: () => Updater }> {
    const metadataDir = await mkdtemp(join(tmpdir(), 'svc-tuf-up-md-'));
    const targetDir = await mkdtemp(join(tmpdir(), 'svc-tuf-up-tg-'));
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
    return { metadataDir, updater };
  }

  async function download(u: Updater, path: string): Promise<Buffer> {
    await u.refresh();
    const info = await u.getTargetInfo(path);
    expect(info, path).toBeDefined();
    return readFile(await u.downloadTarget(info!));
  }

  async function metadata(tenant: string, file: string): Promise<MetadataJson> {
    return JSON.parse((await f.repo.getMetadata(tenant, file)).bytes.toString('utf8')) as MetadataJson;
  }

  async function trustedRootVersion(metadataDir: string): Promise<number> {
    return (JSON.parse(await readFile(join(metadataDir, 'root.json'), 'utf8')) as MetadataJson).signed.version;
  }

  it('rotates root to TUF key ids signed under the old and the new ids; devices pinned to root 1 follow and download', async () => {
    const fw = Buffer.from('firmware 1.0\n');
    const { tenant, legacy } = await legacyTenant([{ path: 'artifacts/fw/1.0/fw.bin', bytes: fw }]);
    const before = await device(tenant);
    expect((await download(before.updater(), 'artifacts/fw/1.0/fw.bin')).equals(fw)).toBe(true);
    const pinnedOnly = await device(tenant);

    const result = await f.repo.upgradeKeyIds();
    expect(result.rotated).toContainEqual({ tenantId: tenant, rootVersion: 2 });
    expect(result.pending.filter((p) => p.tenantId === tenant)).toEqual([]);

    const root2 = await metadata(tenant, '2.root.json');
    const expected = Object.fromEntries((['root', 'targets', 'snapshot', 'timestamp'] as const).map((r) => [r, specKeyId(legacy.pems[r])]));
    expect(Object.keys(root2.signed.keys!).sort()).toEqual(Object.values(expected).sort());
    for (const [role, id] of Object.entries(expected)) expect(root2.signed.roles![role]).toEqual({ keyids: [id], threshold: 1 });
    // Signed by the root key under the id root 1 trusts AND under the id root 2 names.
    expect(root2.signatures.map((s) => s.keyid).sort()).toEqual([legacy.ids.root, expected['root']].sort());
    for (const role of ['targets', 'snapshot'] as const) {
      const md = await metadata(tenant, `2.${role}.json`);
      expect(md.signatures.map((s) => s.keyid)).toEqual([expected[role]]);
    }
    const ts = await metadata(tenant, 'timestamp.json');
    expect([ts.signed.version, ts.signatures.map((s) => s.keyid)]).toEqual([2, [expected['timestamp']]]);
    // Root 1 stays as it was: the chain starts there.
    expect((await metadata(tenant, '1.root.json')).signatures.map((s) => s.keyid)).toEqual([legacy.ids.root]);

    expect((await download(before.updater(), 'artifacts/fw/1.0/fw.bin')).equals(fw)).toBe(true);
    expect(await trustedRootVersion(before.metadataDir)).toBe(2);
    expect((await download(pinnedOnly.updater(), 'artifacts/fw/1.0/fw.bin')).equals(fw)).toBe(true);
    expect(await trustedRootVersion(pinnedOnly.metadataDir)).toBe(2);

    // Publishing goes on under the new ids.
    const cfg = Buffer.from('{"mode":"fast"}');
    await f.repo.publishTargetStream(tenant, { path: 'configs/app.json' }, Readable.from([cfg]));
    expect((await metadata(tenant, '3.targets.json')).signatures.map((s) => s.keyid)).toEqual([expected['targets']]);
    expect((await download(pinnedOnly.updater(), 'configs/app.json')).equals(cfg)).toBe(true);
  });

  it('rotates once when two processes upgrade at once, and leaves an upgraded repository alone', async () => {
    const { tenant } = await legacyTenant();
    const other = await f.second();
    const [a, b] = await Promise.all([f.repo.upgradeKeyIds(), other.upgradeKeyIds()]);
    const rotations = [...a.rotated, ...b.rotated].filter((r) => r.tenantId === tenant);
    expect(rotations).toEqual([{ tenantId: tenant, rootVersion: 2 }]);
    const again = await f.repo.upgradeKeyIds();
    expect(again.rotated.filter((r) => r.tenantId === tenant)).toEqual([]);
    const rows = await f.db.selectFrom('tuf_metadata').select(['role', 'version']).where('tenant_id', '=', tenant).orderBy('role').orderBy('version').execute();
    expect(rows.map((r: { role: string; version: number }) => `${r.version}.${r.role}`)).toEqual([
      '1.root',
      '2.root',
      '1.snapshot',
      '2.snapshot',
      '1.targets',
      '2.targets',
      '1.timestamp',
      '2.timestamp',
    ]);
  });

  it('does not touch a repository created with TUF key ids', async () => {
    const tenant = await f.newTenant();
    await f.repo.ensureTenantRepo(tenant);
    const result = await f.repo.upgradeKeyIds();
    expect(result.rotated.filter((r) => r.tenantId === tenant)).toEqual([]);
    expect(result.pending.filter((r) => r.tenantId === tenant)).toEqual([]);
    const root = await metadata(tenant, 'root.json');
    expect(root.signed.version).toBe(1);
    const key = await f.repo.keys.load(tenant, 'root');
    expect(root.signatures.map((s) => s.keyid)).toEqual([specKeyId(key!.pem)]);
  });

  it('keeps serving and publishing under the old ids while the root key is offline; rotateRoot with the offline key moves every role', async () => {
    const { tenant, legacy } = await legacyTenant([{ path: 'a.bin', bytes: Buffer.from('a') }]);
    const dev = await device(tenant);
    expect(await f.repo.deleteRootKey(tenant)).toBe(true);

    const result = await f.repo.upgradeKeyIds();
    const pending = result.pending.find((p) => p.tenantId === tenant);
    expect(pending?.error).toBeInstanceOf(SigningRepoError);
    expect((pending?.error as SigningRepoError).code).toBe('ROOT_KEY_UNAVAILABLE');
    expect(pending?.error.message).toMatch(/rotateRoot/);
    expect(result.rotated.filter((r) => r.tenantId === tenant)).toEqual([]);

    // Still a working repository: the online roles sign under the ids root 1 names.
    await f.repo.publishTargetStream(tenant, { path: 'b.bin' }, Readable.from([Buffer.from('b')]));
    expect((await metadata(tenant, '2.targets.json')).signatures.map((s) => s.keyid)).toEqual([legacy.ids.targets]);
    expect((await f.repo.refreshIfDue(tenant, new Date(f.clock.now.getTime() + 13 * 3_600_000))).refreshed).toEqual(['timestamp']);
    expect((await download(dev.updater(), 'b.bin')).toString()).toBe('b');

    const next = generateSigningKey();
    expect(await f.repo.rotateRoot(tenant, { newRootKeyPems: [next.pem], signWith: [legacy.pems.root] })).toEqual({ version: 2 });
    const root2 = await metadata(tenant, '2.root.json');
    expect(root2.signatures.map((s) => s.keyid).sort()).toEqual([legacy.ids.root, specKeyId(next.pem)].sort());
    expect(root2.signed.roles!['root']?.keyids).toEqual([specKeyId(next.pem)]);
    for (const role of ['targets', 'snapshot', 'timestamp'] as const) {
      expect(root2.signed.roles![role]?.keyids).toEqual([specKeyId(legacy.pems[role])]);
    }
    // The online roles were re-issued under the ids root 2 names, in the same step.
    const ts = await metadata(tenant, 'timestamp.json');
    expect(ts.signatures.map((s) => s.keyid)).toEqual([specKeyId(legacy.pems.timestamp)]);
    expect((await metadata(tenant, '3.targets.json')).signatures.map((s) => s.keyid)).toEqual([specKeyId(legacy.pems.targets)]);
    expect((await download(dev.updater(), 'a.bin')).toString()).toBe('a');
    expect(await trustedRootVersion(dev.metadataDir)).toBe(2);
    expect((await f.repo.upgradeKeyIds()).pending.filter((p) => p.tenantId === tenant)).toEqual([]);
  });
});
