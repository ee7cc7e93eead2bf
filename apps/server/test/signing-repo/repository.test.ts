import { allWrappedKeys } from '../../src/key-custody/queries.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Metadata, MetadataKind, type Root } from '@tufjs/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SigningRepoError, generateSigningKey, type SigningRepository } from '../../src/signing-repo/index.js';
import { rawEd25519Hex, specKeyId } from '../helpers/legacy-tuf-repo.js';
import { availableDrivers } from '../helpers/store.js';
import { createRepoFixture, type RepoFixture } from '../fixtures/signing-repo.js';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

async function expectRepoError(p: Promise<unknown>, code: string, message?: RegExp): Promise<void> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e, `expected ${code}`).toBeInstanceOf(SigningRepoError);
  expect((e as SigningRepoError).code).toBe(code);
  if (message) expect((e as SigningRepoError).message).toMatch(message);
}

async function versions(f: RepoFixture, tenantId: string): Promise<Record<string, number>> {
  const rows = await f.db
    .selectFrom('tuf_metadata')
    .select(['role', (eb: any) => eb.fn.max('version').as('v')])
    .where('tenant_id', '=', tenantId)
    .groupBy('role')
    .execute();
  return Object.fromEntries(rows.map((r: any) => [r.role, Number(r.v)]));
}

async function rootOf(repo: SigningRepository, tenantId: string): Promise<Metadata<Root>> {
  const file = await repo.getMetadata(tenantId, 'root.json');
  return Metadata.fromJSON(MetadataKind.Root, JSON.parse(file.bytes.toString('utf8')));
}

async function putBlob(repo: SigningRepository, text: string) {
  return repo.blobs.put(Readable.from([Buffer.from(text)]));
}

describe.each(availableDrivers())('SigningRepository on %s', (driver) => {
  let f: RepoFixture;
  beforeAll(async () => {
    f = await createRepoFixture(driver);
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('creates version 1 of every role and its keys wrapped by the KEK, no key file', async () => {
    await f.repo.ensureTenantRepo(f.tenantId);
    expect(await versions(f, f.tenantId)).toEqual({ root: 1, targets: 1, snapshot: 1, timestamp: 1 });
    expect(existsSync(join(f.dataDir, 'keys'))).toBe(false);
    const kek = await f.repo.wrappedKeys.kek();
    const rows = (await allWrappedKeys(f.db)).filter((r) => r.tenant_id === f.tenantId);
    expect(rows.map((r) => [r.name, r.kek_id, r.wrap_alg]).sort()).toEqual(
      ['root', 'snapshot', 'targets', 'timestamp'].map((role) => [`tuf/${role}`, kek.id, 'A256GCM']),
    );

    const root = await rootOf(f.repo, f.tenantId);
    expect(root.signed.consistentSnapshot).toBe(true);
    root.verifyDelegate('root', root); // self-signed by its root key
    // TUF specification key ids (contracts §1), computed here from the stored keys alone.
    for (const role of ['root', 'targets', 'snapshot', 'timestamp'] as const) {
      const pem = (await f.repo.keys.load(f.tenantId, role))!.pem;
      expect(root.signed.roles[role]?.keyIDs, role).toEqual([specKeyId(pem)]);
      expect(root.signed.keys[specKeyId(pem)]?.keyVal, role).toEqual({ public: rawEd25519Hex(pem) });
      const md = JSON.parse((await f.repo.getMetadata(f.tenantId, role === 'timestamp' ? 'timestamp.json' : `1.${role}.json`)).bytes.toString('utf8')) as {
        signatures: { keyid: string }[];
      };
      expect(
        md.signatures.map((sig) => sig.keyid),
        role,
      ).toEqual([specKeyId(pem)]);
    }
    // Expiry periods: root one year from now.
    expect(Date.parse(root.signed.expires) - f.clock.now.getTime()).toBeGreaterThan(364 * DAY);
  });

  it('is idempotent and safe when two processes create the same tenant at once', async () => {
    const tenant = await f.newTenant();
    const other = await f.second();
    await Promise.all([f.repo.ensureTenantRepo(tenant), other.ensureTenantRepo(tenant), f.repo.ensureTenantRepo(tenant)]);
    expect(await versions(f, tenant)).toEqual({ root: 1, targets: 1, snapshot: 1, timestamp: 1 });
    const root = await rootOf(f.repo, tenant);
    const key = await f.repo.keys.load(tenant, 'timestamp');
    expect(root.signed.roles['timestamp']?.keyIDs).toEqual([specKeyId(key!.pem)]);
  });

  it('publishes targets: bumps targets, snapshot and timestamp in one step, signed by the root-named keys', async () => {
    const tenant = await f.newTenant();
    const blob = await putBlob(f.repo, 'firmware 1.0');
    const r = await f.repo.publishTargets(tenant, [
      { path: 'artifacts/fw/1.0/fw.bin', digest: blob.digest, length: blob.length, custom: { media_type: 'application/octet-stream' } },
    ]);
    expect(r).toEqual({ changed: true, targetsVersion: 2, snapshotVersion: 2, timestampVersion: 2 });
    expect(await versions(f, tenant)).toEqual({ root: 1, targets: 2, snapshot: 2, timestamp: 2 });

    const info = await f.repo.getTargetInfo(tenant, 'artifacts/fw/1.0/fw.bin');
    expect(info).toEqual({
      path: 'artifacts/fw/1.0/fw.bin',
      digest: blob.digest,
      length: blob.length,
      custom: { media_type: 'application/octet-stream' },
      hashedPath: `artifacts/fw/1.0/${blob.digest.slice(7)}.fw.bin`,
    });
    expect(await f.repo.getTargetInfo(tenant, 'artifacts/none')).toBeUndefined();

    const root = await rootOf(f.repo, tenant);
    const targets = Metadata.fromJSON(MetadataKind.Targets, JSON.parse((await f.repo.getMetadata(tenant, '2.targets.json')).bytes.toString()));
    root.verifyDelegate('targets', targets);
    const snapshot = Metadata.fromJSON(MetadataKind.Snapshot, JSON.parse((await f.repo.getMetadata(tenant, '2.snapshot.json')).bytes.toString()));
    root.verifyDelegate('snapshot', snapshot);
    expect(snapshot.signed.meta['targets.json']?.version).toBe(2);
    const timestamp = Metadata.fromJSON(MetadataKind.Timestamp, JSON.parse((await f.repo.getMetadata(tenant, 'timestamp.json')).bytes.toString()));
    root.verifyDelegate('timestamp', timestamp);
    expect(timestamp.signed.snapshotMeta.version).toBe(2);
    // Expiry periods of the online roles.
    const now = f.clock.now.getTime();
    expect(Date.parse(targets.signed.expires) - now).toBeGreaterThan(89 * DAY);
    expect(Date.parse(snapshot.signed.expires) - now).toBeGreaterThan(6 * DAY);
    expect(Date.parse(timestamp.signed.expires) - now).toBeGreaterThan(23 * HOUR);
    expect(Date.parse(timestamp.signed.expires) - now).toBeLessThanOrEqual(DAY);
  });

  it('treats an identical republish as a no-op and refuses to change an immutable path', async () => {
    const tenant = await f.newTenant();
    const a = await putBlob(f.repo, 'release envelope A');
    const b = await putBlob(f.repo, 'release envelope B');
    const entry = { path: 'releases/p/1.0/envelope.json', digest: a.digest, length: a.length };
    await f.repo.publishTargets(tenant, [entry], { immutable: true });
    const again = await f.repo.publishTargets(tenant, [entry], { immutable: true });
    expect(again).toEqual({ changed: false, targetsVersion: 2, snapshotVersion: 2, timestampVersion: 2 });
    await expectRepoError(
      f.repo.publishTargets(tenant, [{ ...entry, digest: b.digest, length: b.length }], { immutable: true }),
      'TARGET_IMMUTABLE',
      /targets\[0\]\.path "releases\/p\/1\.0\/envelope\.json" is already published/,
    );
    expect(await versions(f, tenant)).toEqual({ root: 1, targets: 2, snapshot: 2, timestamp: 2 });
    // Without `immutable` a path can be re-pointed (mutable artifacts such as "latest").
    await f.repo.publishTargets(tenant, [{ ...entry, digest: b.digest, length: b.length }]);
    expect((await f.repo.getTargetInfo(tenant, entry.path))?.digest).toBe(b.digest);
  });

  it('refuses targets whose blob is missing or has another length', async () => {
    const tenant = await f.newTenant();
    const blob = await putBlob(f.repo, 'abc');
    await expectRepoError(
      f.repo.publishTargets(tenant, [{ path: 'x/y', digest: `sha256:${'0'.repeat(64)}`, length: 3 }]),
      'TARGET_BLOB_MISSING',
      /targets\[0\]\.digest names blob/,
    );
    await expectRepoError(f.repo.publishTargets(tenant, [{ path: 'x/y', digest: blob.digest, length: 4 }]), 'TARGET_BLOB_MISSING', /targets\[0\]\.length is 4/);
    expect(await versions(f, tenant)).toEqual({ root: 1, targets: 1, snapshot: 1, timestamp: 1 });
  });

  it.each([
    [[], /targets must be an array of 1 to 1000/],
    [[{ path: '../etc/passwd', digest: `sha256:${'a'.repeat(64)}`, length: 1 }], /targets\[0\]\.path must be relative segments/],
    [[{ path: 'a//b', digest: `sha256:${'a'.repeat(64)}`, length: 1 }], /targets\[0\]\.path/],
    [[{ path: '/abs', digest: `sha256:${'a'.repeat(64)}`, length: 1 }], /targets\[0\]\.path/],
    [[{ path: 'ok', digest: 'sha256:XYZ', length: 1 }], /targets\[0\]\.digest must be "sha256:"/],
    [[{ path: 'ok', digest: `sha256:${'a'.repeat(64)}`, length: -1 }], /targets\[0\]\.length must be a non-negative integer/],
    [[{ path: 'ok', digest: `sha256:${'a'.repeat(64)}`, length: 1, custom: [] }], /targets\[0\]\.custom must be a JSON object/],
    [[{ path: 'ok', digest: `sha256:${'a'.repeat(64)}`, length: 1, custom: { big: 'x'.repeat(20_000) } }], /targets\[0\]\.custom must be at most/],
    [
      [
        { path: 'ok', digest: `sha256:${'a'.repeat(64)}`, length: 1 },
        { path: 'ok', digest: `sha256:${'b'.repeat(64)}`, length: 1 },
      ],
      /targets\[1\]\.path "ok" appears twice/,
    ],
  ])('refuses bad entries (%#), naming the field', async (entries, message) => {
    const err = await f.repo.publishTargets(f.tenantId, entries as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SigningRepoError);
    expect(['TARGET_INVALID', 'TARGET_PATH_INVALID']).toContain((err as SigningRepoError).code);
    expect((err as Error).message).toMatch(message);
  });

  it('refreshes exactly the roles that near expiry', async () => {
    const tenant = await f.newTenant();
    const start = f.clock.now;
    await f.repo.ensureTenantRepo(tenant);
    expect((await f.repo.refreshIfDue(tenant, start)).refreshed).toEqual([]);
    // Timestamp (1 day) is due with less than 12 h left.
    expect((await f.repo.refreshIfDue(tenant, new Date(start.getTime() + 13 * HOUR))).refreshed).toEqual(['timestamp']);
    expect((await f.repo.refreshIfDue(tenant, new Date(start.getTime() + 13 * HOUR))).refreshed).toEqual([]);
    // Snapshot (7 days) with less than 3 days left: snapshot and timestamp.
    expect((await f.repo.refreshIfDue(tenant, new Date(start.getTime() + 4 * DAY + HOUR))).refreshed).toEqual(['snapshot', 'timestamp']);
    // Targets (90 days) with less than 30 days left: all three.
    const late = new Date(start.getTime() + 61 * DAY);
    const r = await f.repo.refreshIfDue(tenant, late);
    expect(r.refreshed).toEqual(['targets', 'snapshot', 'timestamp']);
    expect(Date.parse(r.rootExpires)).toBeGreaterThan(late.getTime());
    expect(await versions(f, tenant)).toEqual({ root: 1, targets: 2, snapshot: 3, timestamp: 4 });
    const ts = JSON.parse((await f.repo.getMetadata(tenant, 'timestamp.json')).bytes.toString());
    expect(Date.parse(ts.signed.expires)).toBeGreaterThan(late.getTime() + 23 * HOUR);

    // The job body covers every tenant.
    const all = await f.repo.refreshAllDue(new Date(start.getTime() + 62 * DAY));
    expect(all.failures).toEqual([]);
    expect(all.results.map((x) => x.tenantId)).toContain(tenant);
  });

  it('serializes concurrent publishes from two processes (row lock), losing nothing', async () => {
    const tenant = await f.newTenant();
    await f.repo.ensureTenantRepo(tenant);
    const other = await f.second();
    const blobs = await Promise.all(Array.from({ length: 6 }, (_, i) => putBlob(f.repo, `payload ${i}`)));
    await Promise.all(blobs.map((b, i) => (i % 2 ? other : f.repo).publishTargets(tenant, [{ path: `p/${i}.bin`, digest: b.digest, length: b.length }])));
    expect(await versions(f, tenant)).toEqual({ root: 1, targets: 7, snapshot: 7, timestamp: 7 });
    expect((await f.repo.listTargets(tenant)).map((t) => t.path).sort()).toEqual(blobs.map((_, i) => `p/${i}.bin`));
  });

  it('fails loudly when a process opens another KEK than the one that wrapped the keys', async () => {
    const tenant = await f.newTenant();
    await f.repo.ensureTenantRepo(tenant);
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const otherDir = await mkdtemp(join(tmpdir(), 'svc-other-data-'));
    try {
      const lonely = await f.second({ dataDir: otherDir });
      const blob = await lonely.blobs.put(Readable.from([Buffer.from('x')]));
      await expectRepoError(
        lonely.publishTargets(tenant, [{ path: 'x', digest: blob.digest, length: 1 }]),
        'KEY_UNAVAILABLE',
        // another data dir: another generated default KEK, which opens none of the stored keys
        /^TUF targets key of tenant \S+ is unreadable \(wrapped key \S+\/tuf\/targets: .* is wrapped by KEK file:[0-9a-f]{32}, this server opened KEK file:[0-9a-f]{32}\)$/,
      );
    } finally {
      await rm(otherDir, { recursive: true, force: true });
      await rm(`${otherDir}.kek`, { force: true });
    }
  });

  it('exports and deletes the root key, then rotates root only with the offline key', async () => {
    const tenant = await f.newTenant();
    await f.repo.ensureTenantRepo(tenant);
    const exported = await f.repo.exportRootKey(tenant);
    expect(exported).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(await f.repo.deleteRootKey(tenant)).toBe(true);
    await expectRepoError(f.repo.exportRootKey(tenant), 'ROOT_KEY_UNAVAILABLE');
    await expectRepoError(f.repo.rotateRoot(tenant), 'ROOT_KEY_UNAVAILABLE', /pass signWith/);
    const stranger = generateSigningKey().pem;
    const fresh = generateSigningKey();
    await expectRepoError(f.repo.rotateRoot(tenant, { newRootKeyPems: [fresh.pem], signWith: [stranger] }), 'ROOT_SIGNATURE_INSUFFICIENT');
    await expectRepoError(f.repo.rotateRoot(tenant, { newRootKeyPems: ['not a key'], signWith: [exported] }), 'KEY_INVALID', /newRootKeyPems\[0\]/);
    await expectRepoError(f.repo.rotateRoot(tenant, { newRootKeyPems: [fresh.pem], signWith: [exported, exported] }), 'KEY_INVALID', /same key twice/);

    expect(await f.repo.rotateRoot(tenant, { newRootKeyPems: [fresh.pem], signWith: [exported] })).toEqual({ version: 2 });
    const v1 = Metadata.fromJSON(MetadataKind.Root, JSON.parse((await f.repo.getMetadata(tenant, '1.root.json')).bytes.toString()));
    const v2 = await rootOf(f.repo, tenant);
    expect(v2.signed.version).toBe(2);
    v1.verifyDelegate('root', v2); // old keys signed it
    v2.verifyDelegate('root', v2); // and the new ones
    expect(v2.signed.roles['root']?.keyIDs).toEqual([specKeyId(fresh.pem)]);
    // The new key stays offline: the server holds no root key.
    await expectRepoError(f.repo.exportRootKey(tenant), 'ROOT_KEY_UNAVAILABLE');
    // Publishing keeps working with the unchanged online keys.
    const blob = await putBlob(f.repo, 'after rotation');
    await f.repo.publishTargets(tenant, [{ path: 'after', digest: blob.digest, length: blob.length }]);
  });

  it('rotates to a server-generated root key when none is supplied', async () => {
    const tenant = await f.newTenant();
    await f.repo.ensureTenantRepo(tenant);
    const before = await f.repo.exportRootKey(tenant);
    expect(await f.repo.rotateRoot(tenant)).toEqual({ version: 2 });
    const after = await f.repo.exportRootKey(tenant);
    expect(after).not.toBe(before);
    expect(await f.repo.rotateRoot(tenant)).toEqual({ version: 3 });
  });

  it('refuses malformed tenant ids before touching the filesystem', async () => {
    await expectRepoError(f.repo.ensureTenantRepo('../../etc'), 'REPO_NOT_FOUND', /tenant_id must be a lowercase UUID/);
    await expectRepoError(f.repo.getMetadata('nope', 'timestamp.json'), 'METADATA_NOT_FOUND');
  });
});
