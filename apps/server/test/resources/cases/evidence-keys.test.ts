/**
 * The evidence key's history: every key that signed a case export is recorded (key id, public
 * key, validity period) and published, rotation is an explicit audited change, and a lost or
 * replaced stored key makes exports fail (KEY_UNAVAILABLE) instead of silently minting a new key.
 * An export made before a rotation still verifies with the built `svc-release verify-evidence`
 * given the published history; a forged export claiming an old key id does not.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createPrivateKey } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { canonicalize, envelopeBytes, generateKeyPair, parsePrivateKeyPem, signEnvelope, type PrivateKey } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultWrappedKeys } from '../../../src/key-custody/kek-source.js';
import { deleteWrappedKey, getWrappedKey, upsertWrappedKey, type WrappedKeyRow } from '../../../src/key-custody/queries.js';
import { keyIdOfRef, type KeyRef, type WrappedKeys } from '../../../src/key-custody/wrapped-keys.js';
import { createCasesFixture, type CasesFixture } from '../../fixtures/cases.js';
import { availableDrivers } from '../../helpers/store.js';
import { untar } from '../../fixtures/release-flow.js';
import { writeTar } from '@svc/test-kit';

const CLI = resolve(import.meta.dirname, '../../../../cli/bin/run.js');
const CLI_BUILT = existsSync(resolve(import.meta.dirname, '../../../../cli/dist/commands/verify-evidence.js'));
if (!CLI_BUILT && process.env.CI === 'true') throw new Error('apps/cli is not built (dist/commands/verify-evidence.js missing): run pnpm build first');

function cli(...args: string[]) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
}

/** The export's files with its manifest rewritten by `edit` and signed by `key` under the key id `claim`. */
function resigned(files: Map<string, Buffer>, key: PrivateKey, claim: string, edit: (m: any) => void): Map<string, Buffer> {
  const manifest = JSON.parse(files.get('manifest.json')!.toString('utf8'));
  edit(manifest);
  const payload = canonicalize(manifest);
  const envelope = signEnvelope('svc.case-evidence.v1', payload, key);
  const forged = { ...envelope, signatures: envelope.signatures.map((s) => ({ ...s, keyid: claim })) };
  const out = new Map(files);
  out.set('manifest.json', Buffer.from(payload));
  out.set('manifest.dsse.json', Buffer.from(envelopeBytes(forged)));
  return out;
}

describe.each(availableDrivers())('evidence key history on %s', (driver) => {
  let f: CasesFixture;
  let dir: string;
  let caseId: string;
  let ref: KeyRef;
  let keys: WrappedKeys;
  /** The stored evidence key, as PKCS#8 PEM. */
  const storedPem = async (name = 'evidence/evidence') =>
    (await keys.load({ tenantId: f.t.tenantId, name }))!.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  /** Stores `wrapped` as the row's wrapped bytes (the KEK does not open them). */
  const storeGarbage = async (row: Partial<WrappedKeyRow> = {}) =>
    upsertWrappedKey(f.t.testStore.store.db, {
      keyId: keyIdOfRef(ref),
      tenantId: f.t.tenantId,
      name: ref.name,
      publicKeyId: row.public_key_id ?? 'sha256:' + '0'.repeat(64),
      wrapAlg: 'A256GCM',
      kekId: (await keys.kek()).id,
      wrapped: Buffer.from([0x00, 0xff, 0x13, 0x37, 0x0a]),
    });
  let before: Map<string, Buffer>;
  let after: Map<string, Buffer>;
  let key1: any;
  let key2: any;
  let key1Private: PrivateKey;
  let rotatedAt: string;

  const exportCase = async () => {
    const res = await f.t.app.inject({ method: 'GET', url: `/api/v1/cases/${caseId}/export`, headers: await f.t.apiKeyHeaders('viewer') });
    expect(res.statusCode, res.body).toBe(200);
    return untar(res.rawPayload);
  };

  beforeAll(async () => {
    f = await createCasesFixture(driver);
    dir = await mkdtemp(join(tmpdir(), 'svc-evidence-keys-'));
    ref = { tenantId: f.t.tenantId, name: 'evidence/evidence' };
    // the app's signing repository uses the embedded default KEK of the data dir: the same one
    keys = defaultWrappedKeys(f.t.testStore.store.db, f.dataDir);
    caseId = (await f.openCase()).id;
    expect((await f.api('GET', '/api/v1/evidence-keys')).body).toMatchObject({ evidence_keys: [], total: 0 });
    // no key recorded yet and a stored key the KEK does not open: the service's unusable key (503), not the caller's bad input (400)
    await storeGarbage();
    const garbage = await f.api('GET', `/api/v1/cases/${caseId}/export`);
    expect(garbage.status).toBe(503);
    expect(garbage.body.error).toMatch(
      new RegExp(`^KEY_UNAVAILABLE: evidence key of tenant ${f.t.tenantId} is unreadable \\(wrapped key ${f.t.tenantId}/evidence/evidence: `),
    );
    expect((await f.api('GET', '/api/v1/evidence-keys')).body).toMatchObject({ evidence_keys: [], total: 0 });
    await deleteWrappedKey(f.t.testStore.store.db, keyIdOfRef(ref));
    before = await exportCase();
    key1Private = parsePrivateKeyPem(await storedPem());
    f.t.clock.advance(60_000);
    const rotate = await f.api('POST', '/api/v1/evidence-keys/rotate');
    expect(rotate.status, JSON.stringify(rotate.body)).toBe(200);
    rotatedAt = f.t.clock.now().toISOString();
    f.t.clock.advance(60_000);
    after = await exportCase();
    const list = await f.api('GET', '/api/v1/evidence-keys');
    expect(list.status).toBe(200);
    [key1, key2] = list.body.evidence_keys;
    await writeFile(join(dir, 'before.tar'), writeTar(before));
    await writeFile(join(dir, 'after.tar'), writeTar(after));
    await writeFile(join(dir, 'evidence-keys.json'), JSON.stringify(list.body));
    await writeFile(join(dir, 'key1.pub'), key1.public_key_pem);
  });
  afterAll(async () => {
    await f?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('records every key with its id, public key and validity period; rotation ends one and starts the next', async () => {
    const list = await f.api('GET', '/api/v1/evidence-keys');
    expect(list.body).toMatchObject({ total: 2, limit: 50, offset: 0, counts: { current: 1, retired: 1 } });
    expect(key1).toMatchObject({ seq: 1, algorithm: 'ed25519', valid_until: rotatedAt, retired_by: expect.stringMatching(/^api-key:/) });
    expect(key2).toMatchObject({ seq: 2, algorithm: 'ed25519', valid_from: rotatedAt, valid_until: null, created_by: key1.retired_by, retired_by: null });
    expect(key1.keyid).not.toBe(key2.keyid);
    expect(key1.keyid).toBe(key1Private.publicKey.keyid);
    const current = await f.api('GET', '/api/v1/evidence-key');
    expect(current.body).toMatchObject({ keyid: key2.keyid, public_key_pem: key2.public_key_pem });
    // each manifest names the key that signed it, and so does its envelope
    for (const [files, key] of [
      [before, key1],
      [after, key2],
    ] as const) {
      expect(JSON.parse(files.get('manifest.json')!.toString()).key.keyid).toBe(key.keyid);
      expect(JSON.parse(files.get('manifest.dsse.json')!.toString()).signatures.map((s: any) => s.keyid)).toEqual([key.keyid]);
    }
  });

  it('audits the rotation, and only an administrator may rotate', async () => {
    const audit = await f.api('GET', '/api/v1/audit?action=evidence-key.rotate');
    expect(audit.status).toBe(200);
    expect(audit.body.events.map((e: any) => [e.action, e.target, e.detail.previous_keyid, e.detail.keyid])).toEqual([
      ['evidence-key.rotate', `evidence-key:${key2.keyid}`, key1.keyid, key2.keyid],
    ]);
    const denied = await f.api('POST', '/api/v1/evidence-keys/rotate', undefined, await f.t.apiKeyHeaders('viewer'));
    expect(denied.status).toBe(403);
    expect((await f.api('GET', '/api/v1/evidence-keys')).body.total).toBe(2);
  });

  it.skipIf(!CLI_BUILT)(
    'svc-release verify-evidence --keys: exports from before and after the rotation verify with the key current when each was made',
    () => {
      const keys = join(dir, 'evidence-keys.json');
      const old = cli('verify-evidence', join(dir, 'before.tar'), '--keys', keys, '--tenant', f.t.tenantId, '--json');
      expect(old.stderr).toBe('');
      expect(old.status).toBe(0);
      expect(JSON.parse(old.stdout)).toMatchObject({ case: caseId, keyid: key1.keyid });
      const fresh = cli('verify-evidence', join(dir, 'after.tar'), '--keys', keys, '--json');
      expect(fresh.stderr).toBe('');
      expect(JSON.parse(fresh.stdout)).toMatchObject({ case: caseId, keyid: key2.keyid });
      // a pinned key still works, and pins: the newer export is not signed by it
      expect(cli('verify-evidence', join(dir, 'before.tar'), '--key', join(dir, 'key1.pub')).status).toBe(0);
      const pinned = cli('verify-evidence', join(dir, 'after.tar'), '--key', join(dir, 'key1.pub'));
      expect(pinned.status).toBe(1);
      expect(pinned.stderr).toMatch(/^refused: KEY_UNTRUSTED/);
      expect(cli('verify-evidence', join(dir, 'after.tar'), '--keys', keys, '--key', join(dir, 'key1.pub')).status).toBe(2);
    },
    120_000,
  );

  it.skipIf(!CLI_BUILT)(
    'a forged export claiming the old key id fails: signed by another key, or by the old key outside its validity',
    async () => {
      const keys = join(dir, 'evidence-keys.json');
      const other = generateKeyPair('ed25519');
      await writeFile(join(dir, 'forged-other.tar'), writeTar(resigned(after, other, key1.keyid, (m) => (m.key.keyid = key1.keyid))));
      const byOther = cli('verify-evidence', join(dir, 'forged-other.tar'), '--keys', keys);
      expect(byOther.status).toBe(1);
      expect(byOther.stderr).toMatch(/^refused: KEY_UNTRUSTED/);
      // the retired key, stolen, signs an export dated after its validity ended
      await writeFile(join(dir, 'forged-late.tar'), writeTar(resigned(after, key1Private, key1.keyid, (m) => (m.key.keyid = key1.keyid))));
      const late = cli('verify-evidence', join(dir, 'forged-late.tar'), '--keys', keys);
      expect(late.status).toBe(1);
      expect(late.stderr).toMatch(/^refused: EVIDENCE_INVALID: .*valid/);
      // or back-dated before the key existed
      await writeFile(
        join(dir, 'forged-early.tar'),
        writeTar(
          resigned(before, key1Private, key1.keyid, (m) => {
            m.exported_at = '2001-01-01T00:00:00.000Z';
          }),
        ),
      );
      expect(cli('verify-evidence', join(dir, 'forged-early.tar'), '--keys', keys).stderr).toMatch(/^refused: EVIDENCE_INVALID: .*valid/);
      // a manifest naming one key while signed by another
      await writeFile(join(dir, 'forged-claim.tar'), writeTar(resigned(before, key1Private, key1.keyid, (m) => (m.key.keyid = key2.keyid))));
      expect(cli('verify-evidence', join(dir, 'forged-claim.tar'), '--keys', keys).status).toBe(1);
    },
    120_000,
  );

  it('an imported pending key of a rotation interrupted after its commit (older data dirs) is completed by the next use', async () => {
    const pending = { tenantId: f.t.tenantId, name: `evidence/evidence.${key2.keyid.replace(/^sha256:/, '')}` };
    const current = await storedPem();
    await keys.put(pending, createPrivateKey(current));
    await keys.put(ref, createPrivateKey(key1Private.pem));
    const res = await f.t.app.inject({ method: 'GET', url: `/api/v1/cases/${caseId}/export`, headers: f.admin });
    expect(res.statusCode, res.body).toBe(200);
    expect(JSON.parse((await untar(res.rawPayload)).get('manifest.json')!.toString()).key.keyid).toBe(key2.keyid);
    expect(await storedPem()).toBe(current);
    expect(await keys.load(pending)).toBeUndefined();
  });

  it('a lost or replaced stored key makes the export answer 503 KEY_UNAVAILABLE, never a new key', async () => {
    const db = f.t.testStore.store.db;
    const saved = (await getWrappedKey(db, keyIdOfRef(ref)))!;
    await deleteWrappedKey(db, saved.key_id);
    try {
      const lost = await f.api('GET', `/api/v1/cases/${caseId}/export`);
      expect(lost.status).toBe(503);
      expect(lost.body.error).toMatch(/^KEY_UNAVAILABLE: .*missing/);
      expect(await keys.load(ref)).toBeUndefined();
      // the current public key is still published from the record
      expect((await f.api('GET', '/api/v1/evidence-key')).body.keyid).toBe(key2.keyid);
      await keys.put(ref, createPrivateKey(generateKeyPair('ed25519').pem));
      const replaced = await f.api('GET', `/api/v1/cases/${caseId}/export`);
      expect(replaced.status).toBe(503);
      expect(replaced.body.error).toMatch(/^KEY_UNAVAILABLE: .*does not match/);
      // a stored key the KEK does not open is the service's missing key too, not a caller's bad input
      await storeGarbage(saved);
      const garbage = await f.api('GET', `/api/v1/cases/${caseId}/export`);
      expect(garbage.status).toBe(503);
      expect(garbage.body.error).toMatch(/^KEY_UNAVAILABLE: .*is unreadable/);
      expect((await f.api('GET', '/api/v1/evidence-keys')).body.evidence_keys.map((k: any) => k.keyid)).toEqual([key1.keyid, key2.keyid]);
    } finally {
      await upsertWrappedKey(db, {
        keyId: saved.key_id,
        tenantId: saved.tenant_id,
        name: saved.name,
        publicKeyId: saved.public_key_id,
        wrapAlg: saved.wrap_alg,
        kekId: saved.kek_id,
        wrapped: saved.wrapped,
      });
    }
    expect((await f.api('GET', `/api/v1/cases/${caseId}/export`)).status).toBe(200);
  });
});
