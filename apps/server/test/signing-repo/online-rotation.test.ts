import { createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Metadata, MetadataKind, Root, Signature } from '@tufjs/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SigningRepository, signingKeyFromPem, type SigningKey } from '../../src/signing-repo/index.js';
import { buildSnapshot, buildTargets, buildTimestamp, decodeTargets, encodeMetadata } from '../../src/signing-repo/metadata.js';
import { insertMetadata, latestMetadata, type RepoDb } from '../../src/signing-repo/repo-db.js';
import { tufExpires } from '../../src/signing-repo/expiry.js';
import { createTestApp, jsonApi, type ApiCall, type TestApp } from '../helpers/app.js';
import { TUF_CLIENTS, type TufClient } from '../helpers/tuf-clients.js';
import { availableDrivers, createTestStore, type TestStore } from '../helpers/store.js';

/**
 * A root N+1 document signed as the offline ceremony signs it (svc-release sign-root does the
 * same with @tufjs/models): Ed25519 over the canonical JSON of `signed`, under the TUF key id
 * the root names the key by.
 */
function signRoot(doc: unknown, pems: string[]): Record<string, unknown> {
  const md = Metadata.fromJSON(MetadataKind.Root, doc as Parameters<typeof Metadata.fromJSON>[1]);
  for (const pem of pems) {
    const key = signingKeyFromPem(pem);
    md.sign((data) => new Signature({ keyID: key.keyId, sig: sign(null, data, createPrivateKey(pem)).toString('hex') }), true);
  }
  return md.toJSON();
}

const randomPem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();

describe.each(availableDrivers())('planned rotation of the TUF online keys through root N+1 (%s)', (driver) => {
  let t: TestApp;
  let store: TestStore;
  let dir: string;
  let repo: SigningRepository;
  let base: string;
  let admin: ApiCall;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-tuf-rotation-'));
    store = await createTestStore(driver);
    repo = new SigningRepository({ db: store.store.db, dataDir: dir });
    t = await createTestApp(driver, { shareWith: store, ctxOverrides: { signingRepo: repo } });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const addr = t.app.server.address();
    if (addr === null || typeof addr === 'string') throw new Error('no port');
    base = `http://127.0.0.1:${addr.port}/api/v1/tuf`;
  });
  afterAll(async () => {
    await t?.dispose();
    await store?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  /** A tenant with one published target, an admin API and a real tuf-js client (the agent's version) that pinned root 1. */
  async function pinnedTenant(): Promise<{ tenant: string; api: ApiCall; client: TufClient; metadataDir: string }> {
    const tenant = await t.newTenant();
    admin = jsonApi(t, await t.apiKeyHeaders('admin', tenant));
    await repo.publishTargetStream(tenant, { path: 'artifacts/app/1.0/app.bin' }, Readable.from([Buffer.from('v1\n')]));
    const headers = await t.apiKeyHeaders('viewer', tenant);
    const metadataDir = await mkdtemp(join(dir, 'md-'));
    const root = await fetch(`${base}/${tenant}/metadata/1.root.json`, { headers });
    await writeFile(join(metadataDir, 'root.json'), Buffer.from(await root.arrayBuffer()));
    const paths = {
      metadataDir,
      targetDir: await mkdtemp(join(dir, 'tg-')),
      metadataBaseUrl: `${base}/${tenant}/metadata`,
      targetBaseUrl: `${base}/${tenant}/targets`,
    };
    const client = TUF_CLIENTS[0]!.open(paths, headers);
    expect((await client.fetchTarget('artifacts/app/1.0/app.bin'))?.toString()).toBe('v1\n');
    return { tenant, api: admin, client, metadataDir };
  }

  const trustedRoot = async (metadataDir: string) =>
    (JSON.parse(await readFile(join(metadataDir, 'root.json'), 'utf8')) as { signed: { version: number; roles: Record<string, { keyids: string[] }> } }).signed;

  /** What a holder of the OLD targets key could serve: the current targets re-signed by it as the next version, snapshot and timestamp by the current keys. */
  async function forgeTargetsWith(tenant: string, oldTargets: SigningKey): Promise<void> {
    const db = store.store.db as unknown as RepoDb;
    const now = new Date();
    await db.transaction().execute(async (trx) => {
      const cur = (await latestMetadata(trx, tenant, 'targets'))!;
      const snap = (await latestMetadata(trx, tenant, 'snapshot'))!;
      const ts = (await latestMetadata(trx, tenant, 'timestamp'))!;
      const map = decodeTargets(cur.bytes).signed.targets;
      const targets = { version: cur.version + 1, bytes: encodeMetadata(buildTargets(cur.version + 1, now, map, oldTargets)) };
      const snapshot = {
        version: snap.version + 1,
        bytes: encodeMetadata(buildSnapshot(snap.version + 1, now, targets, (await repo.keys.load(tenant, 'snapshot', trx as never))!)),
      };
      const timestamp = encodeMetadata(buildTimestamp(ts.version + 1, now, snapshot, (await repo.keys.load(tenant, 'timestamp', trx as never))!));
      await insertMetadata(trx, tenant, 'targets', targets.version, targets.bytes, tufExpires(now, 'targets'));
      await insertMetadata(trx, tenant, 'snapshot', snapshot.version, snapshot.bytes, tufExpires(now, 'snapshot'));
      await insertMetadata(trx, tenant, 'timestamp', ts.version + 1, timestamp, tufExpires(now, 'timestamp'));
    });
  }

  async function auditActions(tenant: string): Promise<{ action: string; target: string; detail: Record<string, unknown> }[]> {
    const rows = await store.store.db
      .selectFrom('audit_events')
      .select(['action', 'target', 'detail'])
      .where('tenant_id', '=', tenant)
      .where('action', 'like', 'tuf.%')
      .orderBy('seq')
      .execute();
    return rows.map((r) => ({
      action: r.action,
      target: r.target,
      detail: (typeof r.detail === 'string' ? JSON.parse(r.detail) : r.detail) as Record<string, unknown>,
    }));
  }

  it('with the root key on the server: one call makes new keys, commits root N+1 signed by it and re-signs the chain; a pinned client follows and refuses the old targets key', async () => {
    const { tenant, api, client, metadataDir } = await pinnedTenant();
    const oldTargets = (await repo.keys.load(tenant, 'targets'))!;
    const oldSnapshot = (await repo.keys.load(tenant, 'snapshot'))!;
    const res = await api('POST', '/api/v1/tuf-key-rotations', { roles: ['timestamp', 'targets'], root_signing: 'server' });
    expect(res.status).toBe(201);
    const newTargets = (await repo.keys.load(tenant, 'targets'))!;
    const newTimestamp = (await repo.keys.load(tenant, 'timestamp'))!;
    expect(res.body).toEqual({
      state: 'committed',
      root_version: 2,
      roles: ['targets', 'timestamp'],
      key_ids: { targets: newTargets.keyId, timestamp: newTimestamp.keyId },
    });
    expect(newTargets.keyId).not.toBe(oldTargets.keyId);
    expect((await repo.keys.load(tenant, 'snapshot'))!.keyId).toBe(oldSnapshot.keyId);
    expect(await auditActions(tenant)).toEqual([
      {
        action: 'tuf.online-keys.rotate',
        target: 'tuf-root:2',
        detail: { roles: ['targets', 'timestamp'], root_version: 2, key_ids: res.body.key_ids, root_signing: 'server' },
      },
    ]);
    // the key check at start finds every key where root 2 says
    expect((await repo.inspectRoleKeys()).filter((r) => r.tenantId === tenant).map((r) => r.state)).toEqual(['ok', 'ok', 'ok', 'ok']);

    await repo.publishTargetStream(tenant, { path: 'artifacts/app/2.0/app.bin' }, Readable.from([Buffer.from('v2\n')]));
    expect((await client.fetchTarget('artifacts/app/2.0/app.bin'))?.toString()).toBe('v2\n');
    const trusted = await trustedRoot(metadataDir);
    expect(trusted.version).toBe(2);
    expect(trusted.roles['targets']!.keyids).toEqual([newTargets.keyId]);

    await forgeTargetsWith(tenant, oldTargets);
    await expect(client.refresh()).rejects.toThrow(/targets was signed by 0\/1 keys/);
    // the same metadata signed by the new key is accepted: the key, nothing else, made the difference
    await forgeTargetsWith(tenant, newTargets);
    await expect(client.refresh()).resolves.toBeUndefined();
  });

  it('refuses bad requests with the field named, and non-admins', async () => {
    const { tenant, api } = await pinnedTenant();
    const bad = async (body: unknown) => api('POST', '/api/v1/tuf-key-rotations', body);
    expect(await bad({ roles: ['root'], root_signing: 'server' })).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^body\.roles\.0: /) } });
    expect(await bad({ roles: [], root_signing: 'server' })).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^body\.roles: /) } });
    expect(await bad({ roles: ['targets', 'targets'], root_signing: 'server' })).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/^body\.roles: /) },
    });
    expect(await bad({ roles: ['targets'], root_signing: 'hsm' })).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/^body\.root_signing: /) },
    });
    expect(await bad({ roles: ['targets'] })).toMatchObject({ status: 400, body: { error: 'body.root_signing: is required' } });
    const operator = jsonApi(t, await t.apiKeyHeaders('operator', tenant));
    expect((await operator('POST', '/api/v1/tuf-key-rotations', { roles: ['targets'], root_signing: 'server' })).status).toBe(403);
    expect((await operator('GET', '/api/v1/tuf-key-rotations/pending')).status).toBe(403);
    expect(await api('GET', '/api/v1/tuf-key-rotations/pending')).toMatchObject({
      status: 404,
      body: { error: expect.stringMatching(/^ROTATION_NOT_FOUND: /) },
    });
    expect(await api('DELETE', '/api/v1/tuf-key-rotations/pending')).toMatchObject({ status: 404 });
    expect(await api('POST', '/api/v1/tuf-key-rotations/pending/signed-root', { signed: {}, signatures: [] })).toMatchObject({ status: 404 });
    expect(await auditActions(tenant)).toEqual([]);
  });

  it('with the root key offline: prepare, sign offline, accept; a pinned client walks root N -> N+1 and refuses the old targets key', async () => {
    const { tenant, api, client, metadataDir } = await pinnedTenant();
    // into offline custody: export, then delete naming the exported key
    const exported = await api('POST', '/api/v1/tuf-root-key/export');
    expect(exported).toMatchObject({ status: 200, body: { key_id: (await repo.keys.load(tenant, 'root'))!.keyId } });
    const rootPem = exported.body.private_key_pem as string;
    expect(signingKeyFromPem(rootPem).keyId).toBe(exported.body.key_id);
    expect(await api('DELETE', `/api/v1/tuf-root-key?key_id=${'0'.repeat(64)}`)).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/^query\.key_id 0{64} is not the key id of the server-held root key/) },
    });
    expect(await api('DELETE', '/api/v1/tuf-root-key?key_id=nope')).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/^querystring\.key_id: /) },
    });
    expect(await api('DELETE', `/api/v1/tuf-root-key?key_id=${exported.body.key_id}`)).toMatchObject({
      status: 200,
      body: { key_id: exported.body.key_id, deleted: true },
    });
    expect(await repo.keys.has(tenant, 'root')).toBe(false);
    expect(await api('POST', '/api/v1/tuf-root-key/export')).toMatchObject({ status: 409, body: { error: expect.stringMatching(/^ROOT_KEY_UNAVAILABLE: /) } });
    const oldTargets = (await repo.keys.load(tenant, 'targets'))!;
    const oldKeys = Object.fromEntries(
      await Promise.all((['targets', 'snapshot', 'timestamp'] as const).map(async (r) => [r, (await repo.keys.load(tenant, r))!.keyId])),
    );

    expect(await api('POST', '/api/v1/tuf-key-rotations', { roles: ['targets'], root_signing: 'server' })).toMatchObject({
      status: 409,
      body: { error: expect.stringMatching(/^ROOT_KEY_UNAVAILABLE: .*root_signing "offline"/) },
    });
    const prep = await api('POST', '/api/v1/tuf-key-rotations', { roles: ['targets', 'snapshot', 'timestamp'], root_signing: 'offline' });
    expect(prep.status).toBe(201);
    expect(prep.body).toMatchObject({ state: 'prepared', root_version: 2, roles: ['targets', 'snapshot', 'timestamp'], unsigned_root: { signatures: [] } });
    const unsigned = prep.body.unsigned_root as { signed: Root & { roles: Record<string, { keyids: string[] }> } };
    for (const role of ['targets', 'snapshot', 'timestamp'] as const) {
      expect(unsigned.signed.roles[role]!.keyids).toEqual([prep.body.key_ids[role]]);
      expect(prep.body.key_ids[role]).not.toBe(oldKeys[role]);
    }
    expect(await api('POST', '/api/v1/tuf-key-rotations', { roles: ['targets'], root_signing: 'offline' })).toMatchObject({
      status: 409,
      body: { error: expect.stringMatching(/^ROTATION_PENDING: /) },
    });
    // while it is pending the old keys keep signing: nothing a device sees has changed
    await repo.publishTargetStream(tenant, { path: 'artifacts/app/1.1/app.bin' }, Readable.from([Buffer.from('v1.1\n')]));
    expect((await client.fetchTarget('artifacts/app/1.1/app.bin'))?.toString()).toBe('v1.1\n');
    expect((await repo.keys.load(tenant, 'targets'))!.keyId).toBe(oldKeys['targets']);
    expect((await trustedRoot(metadataDir)).version).toBe(1);
    const pending = await api('GET', '/api/v1/tuf-key-rotations/pending');
    expect(pending).toMatchObject({ status: 200, body: { root_version: 2, current_root_version: 1, stale: false, key_ids: prep.body.key_ids } });
    const file = await api('GET', '/api/v1/tuf-key-rotations/pending/root.json');
    expect(file.status).toBe(200);
    expect(JSON.parse(file.raw.toString('utf8'))).toEqual(unsigned);

    const post = (body: unknown) => api('POST', '/api/v1/tuf-key-rotations/pending/signed-root', body);
    expect(await post(unsigned)).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^ROOT_INVALID: signatures must be/) } });
    expect(await post(signRoot(unsigned, [randomPem()]))).toMatchObject({
      status: 400,
      body: {
        error: expect.stringMatching(/^ROOT_SIGNATURE_INSUFFICIENT: signatures: 0 valid signature\(s\) by the root keys of root version 1, which needs 1/),
      },
    });
    const edited = structuredClone(unsigned) as { signed: { expires: string; roles: Record<string, { keyids: string[] }> } };
    edited.signed.roles['targets']!.keyids = [oldKeys['targets']!];
    expect(await post(signRoot(edited, [rootPem]))).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/^ROOT_INVALID: signed\.roles\.targets\.keyids\[0\] differs from the prepared root version 2/) },
    });
    expect(await post({ signed: { ...unsigned.signed, _type: 'targets' }, signatures: [{ keyid: 'a', sig: 'ab' }] })).toMatchObject({
      status: 400,
      body: { error: 'ROOT_INVALID: signed._type must be "root"' },
    });
    expect(await post({ signed: unsigned.signed, signatures: [{ keyid: 'a', sig: 'XYZ' }] })).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/^ROOT_INVALID: signatures\[0\] must be/) },
    });
    expect(await post([1, 2])).toMatchObject({ status: 400 });
    const huge = await post({ signed: { ...unsigned.signed, padding: 'x'.repeat(70 * 1024) }, signatures: [] });
    expect({ status: huge.status, error: huge.body.error }).toEqual({ status: 400, error: 'body: request body is too large' });
    // refused attempts changed nothing
    expect((await repo.keys.load(tenant, 'targets'))!.keyId).toBe(oldKeys['targets']);
    expect((await api('GET', '/api/v1/tuf-key-rotations/pending')).status).toBe(200);

    const accepted = await post(signRoot(unsigned, [rootPem]));
    expect(accepted).toMatchObject({
      status: 200,
      body: { state: 'committed', root_version: 2, roles: ['targets', 'snapshot', 'timestamp'], key_ids: prep.body.key_ids },
    });
    for (const role of ['targets', 'snapshot', 'timestamp'] as const) expect((await repo.keys.load(tenant, role))!.keyId).toBe(prep.body.key_ids[role]);
    expect(await repo.keys.has(tenant, 'root')).toBe(false);
    const leftovers = await store.store.db
      .selectFrom('wrapped_keys')
      .select('key_id')
      .where('tenant_id', '=', tenant)
      .where('name', 'like', 'tuf-pending/%')
      .execute();
    expect(leftovers).toEqual([]);
    expect((await api('GET', '/api/v1/tuf-key-rotations/pending')).status).toBe(404);
    expect((await auditActions(tenant)).map((a) => [a.action, a.target, a.detail['root_signing']])).toEqual([
      ['tuf.root-key.export', `tuf-key:${exported.body.key_id}`, undefined],
      ['tuf.root-key.delete', `tuf-key:${exported.body.key_id}`, undefined],
      ['tuf.online-keys.prepare', 'tuf-root:2', 'offline'],
      ['tuf.online-keys.rotate', 'tuf-root:2', 'offline'],
    ]);
    // the stored root 2 is the one the holders signed
    expect(JSON.parse((await repo.getMetadata(tenant, '2.root.json')).bytes.toString('utf8'))).toEqual(signRoot(unsigned, [rootPem]));

    await repo.publishTargetStream(tenant, { path: 'artifacts/app/2.0/app.bin' }, Readable.from([Buffer.from('v2\n')]));
    expect((await client.fetchTarget('artifacts/app/2.0/app.bin'))?.toString()).toBe('v2\n');
    expect((await trustedRoot(metadataDir)).version).toBe(2);
    await forgeTargetsWith(tenant, oldTargets);
    await expect(client.refresh()).rejects.toThrow(/targets was signed by 0\/1 keys/);
  });

  it('cancels a prepared rotation (its pending keys deleted) and refuses a signed root once another root committed (stale)', async () => {
    const { tenant, api } = await pinnedTenant();
    const rootPem = await repo.exportRootKey(tenant);
    await repo.deleteRootKey(tenant);
    const first = await api('POST', '/api/v1/tuf-key-rotations', { roles: ['snapshot'], root_signing: 'offline' });
    expect(first.status).toBe(201);
    expect(await api('DELETE', '/api/v1/tuf-key-rotations/pending')).toMatchObject({
      status: 200,
      body: { state: 'cancelled', root_version: 2, roles: ['snapshot'] },
    });
    const pendingRows = () =>
      store.store.db.selectFrom('wrapped_keys').select('key_id').where('tenant_id', '=', tenant).where('name', 'like', 'tuf-pending/%').execute();
    expect(await pendingRows()).toEqual([]);

    const second = await api('POST', '/api/v1/tuf-key-rotations', { roles: ['snapshot'], root_signing: 'offline' });
    expect(second.status).toBe(201);
    expect((await pendingRows()).length).toBe(1);
    // another root commits meanwhile (a root key rotation signed with the offline key)
    expect(await repo.rotateRoot(tenant, { signWith: [rootPem], newRootKeyPems: [rootPem], keepNewRootKeyOnServer: false })).toEqual({ version: 2 });
    expect(await api('GET', '/api/v1/tuf-key-rotations/pending')).toMatchObject({
      status: 200,
      body: { stale: true, current_root_version: 2, root_version: 2 },
    });
    expect(await api('POST', '/api/v1/tuf-key-rotations/pending/signed-root', signRoot(second.body.unsigned_root, [rootPem]))).toMatchObject({
      status: 409,
      body: { error: expect.stringMatching(/^ROTATION_STALE: root version 2 was committed after/) },
    });
    expect((await api('DELETE', '/api/v1/tuf-key-rotations/pending')).status).toBe(200);
    expect((await auditActions(tenant)).map((a) => a.action)).toEqual([
      'tuf.online-keys.prepare',
      'tuf.online-keys.cancel',
      'tuf.online-keys.prepare',
      'tuf.online-keys.cancel',
    ]);
  });
});
