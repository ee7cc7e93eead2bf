import { execFileSync } from 'node:child_process';
import { createDecipheriv, createHash, createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata, MetadataKind, Signature, type Snapshot, type Targets, type Timestamp } from '@tufjs/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, svcRelease, waitFor, type ArtifactRecord, type GroupRecord } from '../src/index.js';
import { freshSchema, stores } from './helpers/postgres.js';
import { tempRoot } from './helpers/temp.js';
import { requireTool } from './helpers/tools.js';

/**
 * The documented offline-root ceremony end to end (docs/signing-repository.md "Rotating the
 * online keys"), with a real agent that pinned root 1 at enrollment: the root key moved into
 * offline custody through the API, the rotation of the targets key prepared, root 2 signed
 * with the real `svc-release sign-root` and accepted; the agent then walks root 1 -> 2 and
 * installs a release signed after the rotation. On PostgreSQL, where a second client can reach
 * the database while the server runs, targets metadata signed with the OLD targets key (what
 * its thief could serve) is put in front of the agent, and the agent refuses it.
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

type Pg = { url: string; schema: string };

function psql(pg: Pg, sql: string): string {
  return execFileSync('psql', [pg.url, '-v', 'ON_ERROR_STOP=1', '-q', '-1', '-At', '-c', sql], { stdio: ['ignore', 'pipe', 'pipe'] })
    .toString('utf8')
    .trim();
}

/** A wrapped key of the server opened with its KEK file (AES-256-GCM: 12-byte IV, ciphertext, 16-byte tag; the key id is the AAD). */
async function unwrapKey(pg: Pg, keyId: string): Promise<KeyObject> {
  const kek = await readFile(join(tmpdir(), `svc-e2e-kek-${pg.schema}`));
  const wrapped = Buffer.from(psql(pg, `SELECT encode(wrapped, 'hex') FROM "${pg.schema}".wrapped_keys WHERE key_id = '${keyId}'`), 'hex');
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
async function forgeTargets(pg: Pg, tenant: string, targetsKey: KeyObject): Promise<number> {
  type Doc = { signed: { version: number; expires: string; meta?: Record<string, unknown> }; signatures: unknown[] };
  const latest = (role: string) =>
    JSON.parse(
      Buffer.from(
        psql(
          pg,
          `SELECT encode(bytes, 'hex') FROM "${pg.schema}".tuf_metadata WHERE tenant_id = '${tenant}' AND role = '${role}' ORDER BY version DESC LIMIT 1`,
        ),
        'hex',
      ).toString('utf8'),
    ) as Doc;
  const meta = (version: number, bytes: Buffer) => ({ version, length: bytes.length, hashes: { sha256: createHash('sha256').update(bytes).digest('hex') } });
  const asJson = (d: Doc) => d as unknown as Parameters<typeof Metadata.fromJSON>[1];
  const t = latest('targets');
  t.signed.version += 1;
  const targetsBytes = resign(Metadata.fromJSON(MetadataKind.Targets, asJson(t)), targetsKey);
  const s = latest('snapshot');
  s.signed.version += 1;
  s.signed.meta = { ...s.signed.meta, 'targets.json': meta(t.signed.version, targetsBytes) };
  const snapshotBytes = resign(Metadata.fromJSON(MetadataKind.Snapshot, asJson(s)), await unwrapKey(pg, `${tenant}/tuf/snapshot`));
  const ts = latest('timestamp');
  ts.signed.version += 1;
  ts.signed.meta = { 'snapshot.json': meta(s.signed.version, snapshotBytes) };
  const timestampBytes = resign(Metadata.fromJSON(MetadataKind.Timestamp, asJson(ts)), await unwrapKey(pg, `${tenant}/tuf/timestamp`));
  const row = (role: string, d: Doc, bytes: Buffer) =>
    `('${tenant}', '${role}', ${d.signed.version}, decode('${bytes.toString('hex')}', 'hex'), '${d.signed.expires}')`;
  psql(
    pg,
    `INSERT INTO "${pg.schema}".tuf_metadata (tenant_id, role, version, bytes, expires_at) VALUES ${[
      row('targets', t, targetsBytes),
      row('snapshot', s, snapshotBytes),
      row('timestamp', ts, timestampBytes),
    ].join(', ')}`,
  );
  return t.signed.version;
}

describe.each(stores().filter((s) => s === 'embedded' || havePsql))(
  'TUF online key rotation through root N+1 with the root key offline (%s store)',
  (store) => {
    let root: { dir: string; cleanup: () => Promise<void> };
    let fleet: Fleet;
    let pg: Pg | undefined;
    let drop = () => undefined as void;
    beforeAll(async () => {
      root = await tempRoot('tuf-rotation');
      let server = {};
      if (store === 'postgres') {
        const s = freshSchema();
        drop = s.drop;
        pg = { url: s.url, schema: s.schema };
        server = { databaseUrl: s.url, schema: s.schema };
      }
      fleet = await Fleet.start({ root: root.dir, devices: [DEVICE], server });
    });
    afterAll(async () => {
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
      const oldTargetsKey = pg && (await unwrapKey(pg, `${fleet.tenant}/tuf/targets`));
      if (oldTargetsKey) expect(tufKeyId(oldTargetsKey)).toBe(oldTargetsId);

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

      if (pg === undefined || oldTargetsKey === undefined) return;
      // targets signed with the OLD key after the rotation: the agent refuses them and installs nothing
      const v3 = Buffer.from('listen = "0.0.0.0:9000"\nforged = true\n');
      const next = await release('3.0.0', v3, group);
      const forgedVersion = await forgeTargets(pg, fleet.tenant, oldTargetsKey);
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
