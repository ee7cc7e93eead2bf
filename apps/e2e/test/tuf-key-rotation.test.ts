import { execFileSync } from 'node:child_process';
import { createDecipheriv, createHash, createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata, MetadataKind, Signature, type Snapshot, type Targets, type Timestamp } from '@tufjs/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '@svc/server';
import { ADMIN, Fleet, startServer, svcRelease, waitFor, type ArtifactRecord, type GroupRecord, type ServerProcess } from '../src/index.js';
import { freshSchema, stores } from './helpers/postgres.js';
import { tempDir } from '@svc/test-kit';
import { requireTool } from './helpers/tools.js';

/**
 * The documented offline-root ceremony end to end (docs/signing-repository.md "Rotating the
 * online keys"), with a real agent that pinned root 1 at enrollment: the root key moved into
 * offline custody through the API, the rotation of the targets key prepared, root 2 signed
 * with the real `svc-release sign-root` and accepted; the agent then walks root 1 -> 2 and
 * installs a release signed after the rotation. Then targets metadata signed with the OLD
 * targets key (what its thief could serve) is put in front of the agent, and the agent refuses it.
 */
const DEVICE = 'dev-rot';
const havePsql = !process.env.SVC_TEST_DATABASE_URL || requireTool('psql', 'postgresql-client');

// a real probe on the device: the placed config is there
const PROBE = {
  name: 'config-present',
  type: 'command' as const,
  command: ['/bin/sh', '-c', 'test -s "$SVC_AGENT_DATA_DIR/placed/config/app-config"'],
  timeout_s: 10,
};

/** What the test reads from and writes to the server's database, outside the server. */
interface RepoRows {
  wrapped(keyId: string): Promise<Buffer>;
  latest(tenant: string, role: string): Promise<Buffer>;
  insert(rows: { tenant: string; role: string; version: number; bytes: Buffer; expires: string }[]): Promise<void>;
}

/**
 * Database access beside the running server. PostgreSQL: psql, while the server runs. The
 * embedded database admits one process: the server is stopped, the database opened here, and
 * the server started again on the same ports (the agent reconnects by its backoff).
 */
interface RepoAccess {
  kekFile: string;
  with<T>(fn: (rows: RepoRows) => Promise<T>): Promise<T>;
  stop(): Promise<void>;
}

type Pg = { url: string; schema: string };

function psql(pg: Pg, sql: string): string {
  return execFileSync('psql', [pg.url, '-v', 'ON_ERROR_STOP=1', '-q', '-1', '-At', '-c', sql], { stdio: ['ignore', 'pipe', 'pipe'] })
    .toString('utf8')
    .trim();
}

function postgresAccess(pg: Pg): RepoAccess {
  const rows: RepoRows = {
    wrapped: (keyId) =>
      Promise.resolve(Buffer.from(psql(pg, `SELECT encode(wrapped, 'hex') FROM "${pg.schema}".wrapped_keys WHERE key_id = '${keyId}'`), 'hex')),
    latest: (tenant, role) =>
      Promise.resolve(
        Buffer.from(
          psql(
            pg,
            `SELECT encode(bytes, 'hex') FROM "${pg.schema}".tuf_metadata WHERE tenant_id = '${tenant}' AND role = '${role}' ORDER BY version DESC LIMIT 1`,
          ),
          'hex',
        ),
      ),
    insert: (list) => {
      const values = list.map((r) => `('${r.tenant}', '${r.role}', ${r.version}, decode('${r.bytes.toString('hex')}', 'hex'), '${r.expires}')`);
      psql(pg, `INSERT INTO "${pg.schema}".tuf_metadata (tenant_id, role, version, bytes, expires_at) VALUES ${values.join(', ')}`);
      return Promise.resolve();
    },
  };
  return { kekFile: join(tmpdir(), `svc-e2e-kek-${pg.schema}`), with: (fn) => fn(rows), stop: () => Promise.resolve() };
}

function embeddedAccess(fleet: Fleet, dataDir: string): RepoAccess {
  let current: ServerProcess = fleet.server;
  const port = (addr: string) => addr.slice(addr.lastIndexOf(':') + 1);
  return {
    // no KEK setting: the server generated one beside its data directory (docs/server.md "Key encryption")
    kekFile: `${dataDir}.kek`,
    async with(fn) {
      const [httpPort, devicePort] = [port(current.url), port(current.deviceAddr)];
      await current.stop();
      const store = await openStore({ pgliteDir: join(dataDir, 'db') });
      let out;
      try {
        out = await fn({
          wrapped: async (keyId) =>
            Buffer.from((await store.db.selectFrom('wrapped_keys').select('wrapped').where('key_id', '=', keyId).executeTakeFirstOrThrow()).wrapped),
          latest: async (tenant, role) =>
            Buffer.from(
              (
                await store.db
                  .selectFrom('tuf_metadata')
                  .select('bytes')
                  .where('tenant_id', '=', tenant)
                  .where('role', '=', role as 'targets')
                  .orderBy('version', 'desc')
                  .limit(1)
                  .executeTakeFirstOrThrow()
              ).bytes,
            ),
          insert: async (list) => {
            await store.db
              .insertInto('tuf_metadata')
              .values(list.map((r) => ({ tenant_id: r.tenant, role: r.role as 'targets', version: r.version, bytes: r.bytes, expires_at: r.expires })))
              .execute();
          },
        });
      } finally {
        await store.close();
      }
      current = await startServer({
        dataDir,
        admin: ADMIN,
        env: { SVC_HTTP_ADDR: `127.0.0.1:${httpPort}`, SVC_DEVICE_ADDR: `127.0.0.1:${devicePort}` },
      });
      return out;
    },
    stop: async () => {
      if (current !== fleet.server) await current.stop();
    },
  };
}

/** A wrapped key of the server opened with its KEK file (AES-256-GCM: 12-byte IV, ciphertext, 16-byte tag; the key id is the AAD). */
async function unwrapKey(access: RepoAccess, rows: RepoRows, keyId: string): Promise<KeyObject> {
  const kek = await readFile(access.kekFile);
  const wrapped = await rows.wrapped(keyId);
  const d = createDecipheriv('aes-256-gcm', kek, wrapped.subarray(0, 12), { authTagLength: 16 });
  d.setAAD(Buffer.from(keyId));
  d.setAuthTag(wrapped.subarray(wrapped.length - 16));
  const der = Buffer.concat([d.update(wrapped.subarray(12, wrapped.length - 16)), d.final()]);
  return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
}

/** The TUF key id of an Ed25519 key (sha256 of the canonical {keytype, keyval, scheme}). */
function tufKeyId(key: KeyObject): string {
  const raw = createPublicKey(key).export({ format: 'der', type: 'spki' }).subarray(12).toString('hex');
  return createHash('sha256').update(`{"keytype":"ed25519","keyval":{"public":"${raw}"},"scheme":"ed25519"}`).digest('hex');
}

function resign<T extends Targets | Snapshot | Timestamp>(md: Metadata<T>, key: KeyObject): Buffer {
  md.signatures = {};
  md.sign((data) => new Signature({ keyID: tufKeyId(key), sig: sign(null, data, key).toString('hex') }), false);
  return Buffer.from(JSON.stringify(md.toJSON()));
}

/**
 * Inserts the next targets (the current map, signed by `targetsKey`), snapshot and timestamp
 * (signed by the repository's current keys) as the tenant's newest metadata.
 */
async function forgeTargets(access: RepoAccess, rows: RepoRows, tenant: string, targetsKey: KeyObject): Promise<number> {
  type Doc = { signed: { version: number; expires: string; meta?: Record<string, unknown> }; signatures: unknown[] };
  const latest = async (role: string) => JSON.parse((await rows.latest(tenant, role)).toString('utf8')) as Doc;
  const meta = (version: number, bytes: Buffer) => ({ version, length: bytes.length, hashes: { sha256: createHash('sha256').update(bytes).digest('hex') } });
  const asJson = (d: Doc) => d as unknown as Parameters<typeof Metadata.fromJSON>[1];
  const t = await latest('targets');
  t.signed.version += 1;
  const targetsBytes = resign(Metadata.fromJSON(MetadataKind.Targets, asJson(t)), targetsKey);
  const s = await latest('snapshot');
  s.signed.version += 1;
  s.signed.meta = { ...s.signed.meta, 'targets.json': meta(t.signed.version, targetsBytes) };
  const snapshotBytes = resign(Metadata.fromJSON(MetadataKind.Snapshot, asJson(s)), await unwrapKey(access, rows, `${tenant}/tuf/snapshot`));
  const ts = await latest('timestamp');
  ts.signed.version += 1;
  ts.signed.meta = { 'snapshot.json': meta(s.signed.version, snapshotBytes) };
  const timestampBytes = resign(Metadata.fromJSON(MetadataKind.Timestamp, asJson(ts)), await unwrapKey(access, rows, `${tenant}/tuf/timestamp`));
  await rows.insert([
    { tenant, role: 'targets', version: t.signed.version, bytes: targetsBytes, expires: t.signed.expires },
    { tenant, role: 'snapshot', version: s.signed.version, bytes: snapshotBytes, expires: s.signed.expires },
    { tenant, role: 'timestamp', version: ts.signed.version, bytes: timestampBytes, expires: ts.signed.expires },
  ]);
  return t.signed.version;
}

describe.each(stores().filter((s) => s === 'embedded' || havePsql))(
  'TUF online key rotation through root N+1 with the root key offline (%s store)',
  (store) => {
    let root: { dir: string; cleanup: () => Promise<void> };
    let fleet: Fleet;
    let pg: Pg | undefined;
    let access: RepoAccess;
    let drop = () => undefined as void;
    beforeAll(async () => {
      root = await tempDir('e2e-tuf-rotation');
      let server = {};
      if (store === 'postgres') {
        const s = freshSchema();
        drop = s.drop;
        pg = { url: s.url, schema: s.schema };
        server = { databaseUrl: s.url, schema: s.schema };
      }
      fleet = await Fleet.start({ root: root.dir, devices: [DEVICE], server });
      access = pg ? postgresAccess(pg) : embeddedAccess(fleet, join(root.dir, 'server'));
    });
    afterAll(async () => {
      await access?.stop();
      await fleet?.stop();
      drop();
      await root?.cleanup();
    });

    const release = async (version: string, bytes: Buffer, group: GroupRecord): Promise<{ artifact: ArtifactRecord; releaseId: string }> => {
      const artifact = await fleet.api.uploadArtifact({ name: 'app-config', version, kind: 'config', filename: 'app.toml', bytes });
      const { release: r } = await fleet.signAndSubmit({
        version,
        components: [{ name: 'app-config', artifact }],
        orderedGroups: [['app-config']],
        group,
        probes: [PROBE],
      });
      return { artifact, releaseId: r.id };
    };

    it('the agent pinned to root 1 walks to root 2, installs a release signed after the rotation, and refuses targets signed with the old key', async () => {
      const data = fleet.dataDir(DEVICE);
      const trustedRoot = async () =>
        JSON.parse(await readFile(join(data, 'tuf', 'root.json'), 'utf8')) as { signed: { version: number; roles: Record<string, { keyids: string[] }> } };
      // the agent pins the repository's root right after enrollment
      const pinned = await waitFor('the agent to pin the TUF root', () => trustedRoot().catch(() => undefined), 30_000);
      expect(pinned.signed.version).toBe(1);
      const oldTargetsId = pinned.signed.roles['targets']!.keyids[0]!;
      // what a thief of the targets key holds
      const oldTargetsKey = await access.with((rows) => unwrapKey(access, rows, `${fleet.tenant}/tuf/targets`));
      expect(tufKeyId(oldTargetsKey)).toBe(oldTargetsId);

      // 0. the root key into offline custody
      const custody = join(root.dir, 'custody');
      await mkdir(custody, { recursive: true, mode: 0o700 });
      const exported = await fleet.api.json<{ key_id: string; private_key_pem: string }>('POST', '/tuf-root-key/export', undefined, 200);
      await writeFile(join(custody, 'root.key'), exported.private_key_pem, { mode: 0o600 });
      await fleet.api.json('DELETE', `/tuf-root-key?key_id=${exported.key_id}`, undefined, 200);

      // 1. the server prepares root 2 naming a new targets key (stored wrapped, not yet signing)
      const prepared = await fleet.api.json<{ state: string; root_version: number; key_ids: { targets: string } }>(
        'POST',
        '/tuf-key-rotations',
        { roles: ['targets'], root_signing: 'offline' },
        201,
      );
      expect(prepared).toMatchObject({ state: 'prepared', root_version: 2 });
      // 2. carried to the offline machine: the unsigned root 2 and the trusted root 1
      const unsignedFile = join(custody, '2.root.unsigned.json');
      const trustedFile = join(custody, '1.root.json');
      await writeFile(unsignedFile, Buffer.from(await (await fleet.api.raw('GET', '/tuf-key-rotations/pending/root.json', undefined, 200)).arrayBuffer()));
      await writeFile(trustedFile, Buffer.from(await (await fleet.api.raw('GET', `/tuf/${fleet.tenant}/metadata/1.root.json`, undefined, 200)).arrayBuffer()));
      // 3. signed there with the offline root key
      const signedFile = join(custody, '2.root.json');
      const signed = await svcRelease(['sign-root', unsignedFile, '--trusted', trustedFile, '--key', join(custody, 'root.key'), '--out', signedFile]);
      expect({ status: signed.status, stderr: signed.stderr }).toEqual({ status: 0, stderr: '' });
      expect(signed.stdout).toContain(`targets: ${oldTargetsId} -> ${prepared.key_ids.targets}`);
      expect(signed.stdout).toContain('signatures of root 1: 1 of 1 needed\n');
      // 4. brought back: checked against root 1 and itself, the new key signs from now on
      const accepted = await fleet.api.json('POST', '/tuf-key-rotations/pending/signed-root', JSON.parse(await readFile(signedFile, 'utf8')), 200);
      expect(accepted).toMatchObject({ state: 'committed', root_version: 2, roles: ['targets'], key_ids: prepared.key_ids });

      // a release signed after the rotation installs; the agent followed root 1 -> 2
      const group = await fleet.createGroup('field', [DEVICE]);
      const v2 = Buffer.from('listen = "0.0.0.0:9000"\nrotated = true\n');
      const { releaseId } = await release('2.0.0', v2, group);
      const rollout = await fleet.startRollout(releaseId);
      expect(await fleet.waitSettled(rollout.transaction_id!)).toMatchObject({ state: 'committed' });
      expect(await readFile(join(data, 'placed', 'config', 'app-config'))).toEqual(v2);
      const walked = await trustedRoot();
      expect(walked.signed.version).toBe(2);
      expect(walked.signed.roles['targets']!.keyids).toEqual([prepared.key_ids.targets]);
      const agentTargets = JSON.parse(await readFile(join(data, 'tuf', 'targets.json'), 'utf8')) as { signatures: { keyid: string }[] };
      expect(agentTargets.signatures.map((s) => s.keyid)).toEqual([prepared.key_ids.targets]);

      // targets signed with the OLD key after the rotation: the agent refuses them and installs nothing
      const v3 = Buffer.from('listen = "0.0.0.0:9000"\nforged = true\n');
      const next = await release('3.0.0', v3, group);
      const forgedVersion = await access.with((rows) => forgeTargets(access, rows, fleet.tenant, oldTargetsKey));
      const agent = fleet.agents.get(DEVICE)!;
      await fleet.startRollout(next.releaseId);
      const refusal = await waitFor(
        'the agent to refuse targets signed with the old key',
        () =>
          agent.lines
            .filter((l) => l.startsWith('{'))
            .map((l) => JSON.parse(l) as { msg: string; reason?: string })
            .find((l) => l.msg === 'assignment not applied'),
        60_000,
      );
      expect(refusal.reason).toMatch(/^TUF refresh failed: .*targets was signed by 0\/1 keys/);
      expect(await readFile(join(data, 'placed', 'config', 'app-config'))).toEqual(v2);
      const kept = JSON.parse(await readFile(join(data, 'tuf', 'targets.json'), 'utf8')) as { signed: { version: number } };
      expect(kept.signed.version).toBeLessThan(forgedVersion);
    });
  },
);
