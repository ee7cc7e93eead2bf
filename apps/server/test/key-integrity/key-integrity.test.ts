/**
 * The real server process (`node dist/main.js`) on a data dir whose wrapped keys were deleted,
 * corrupted or replaced in the database (everything else intact): the start (and `node dist/main.js check`) fails
 * with exit status 2 and one line naming the key and its tenant; with every key in place the
 * check passes; SVC_KEY_RECOVERY=tuf-online-rotate replaces lost TUF online keys through a
 * root update signed by the root key, SVC_KEY_RECOVERY=evidence-rotate,device-ca-rotate retires
 * a lost evidence key and a lost device CA key through their audited rotations (the device
 * side of the CA rotation is device-channel/ca-rotation.test.ts); and a TUF key that disappears
 * while the server runs (PostgreSQL, shared with the test) makes a publish answer 503
 * KEY_UNAVAILABLE naming it. Needs the build.
 */
import { spawn } from 'node:child_process';
import { createPrivateKey, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeviceCaStore } from '../../src/device-channel/device-ca.js';
import { createCa } from '../../src/device-channel/pki.js';
import { ensureServerTls } from '../../src/device-channel/server-tls.js';
import { getDeviceCa } from '../../src/resources/device-ca/queries.js';
import { ensureDefaultTenant } from '../../src/resources/tenants/queries.js';
import { recordFirstEvidenceKey } from '../../src/resources/case-exports/commands.js';
import { firstEvidenceKey } from '../../src/resources/case-exports/evidence-key.js';
import { deviceCaKeyRef, SERVER_CA_KEY_REF } from '../../src/device-channel/ca-key.js';
import { allWrappedKeys, deleteWrappedKey, getWrappedKey, insertWrappedKey, upsertWrappedKey, type WrappedKeyRow } from '../../src/key-custody/queries.js';
import { defaultWrappedKeys } from '../../src/key-custody/kek-source.js';
import { keyIdOfRef, type KeyRef } from '../../src/key-custody/wrapped-keys.js';
import type { Store } from '../../src/store/open.js';
import type { Db } from '../../src/store/tx.js';
import { dropSchemaAt } from '../helpers/store.js';
import { runUnitOfWork, systemActor } from '../../src/resources/unit-of-work.js';
import { generateSigningKey } from '../../src/signing-repo/keys.js';
import { SigningRepository } from '../../src/signing-repo/repository.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { openStore } from '../../src/store/open.js';
import { MAIN_JS, mainBuilt, startMain, stopMain } from '../helpers/main-process.js';
import { artifactMultipart } from '../fixtures/release-flow.js';

const built = mainBuilt('platform-key-integrity');
const admin = { SVC_ADMIN_EMAIL: 'root@example.test', SVC_ADMIN_PASSWORD: 'password123' };

/** Runs `node dist/main.js [...args]` to its exit (a start that fails, or `check`). */
function runMain(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN_JS, ...args], {
      env: { PATH: process.env.PATH ?? '', SVC_HTTP_ADDR: '127.0.0.1:0', SVC_DEVICE_ADDR: '127.0.0.1:0', SVC_LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // a start that wrongly succeeds is stopped, so the test fails on its status instead of hanging
    const timer = setTimeout(() => child.kill('SIGTERM'), 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

interface KeyFile {
  /** The name the failure line gives the key. */
  label: string;
  /** Where it is stored (`wrapped_keys`). */
  ref: KeyRef;
  /** Another valid key of the same kind (not the one the database records), PKCS#8 PEM. */
  otherKey(): Promise<string>;
  /** False for a key whose absence is legitimate (the TUF root key in offline custody). */
  required: boolean;
  perTenant: boolean;
}

describe.skipIf(!built)('key integrity of node dist/main.js', () => {
  let dir: string;
  /** Every wrapped key as the setup stored it: what `restore` puts back. */
  let pristine: WrappedKeyRow[];
  let tenant: string;
  let keyFiles: KeyFile[];
  let deviceCaKeyFile: string;

  /** Opens the stopped server's embedded database for one change. */
  const withStore = async <T>(fn: (store: Store) => Promise<T>): Promise<T> => {
    const store = await openStore({ pgliteDir: join(dir, 'db') });
    try {
      return await fn(store);
    } finally {
      await store.close();
    }
  };
  /** A change to the stopped server's database; `change(...)` applies several in one open. */
  type Change = (store: Store) => Promise<unknown>;
  const change = (...changes: Change[]) =>
    withStore(async (store) => {
      for (const c of changes) await c(store);
    });
  const restore: Change = async (store) => {
    for (const r of await allWrappedKeys(store.db)) await deleteWrappedKey(store.db, r.key_id);
    for (const r of pristine) await insertRow(store.db, r);
  };
  const removeKey =
    (ref: KeyRef): Change =>
    (store) =>
      deleteWrappedKey(store.db, keyIdOfRef(ref));
  const garbleKey =
    (ref: KeyRef): Change =>
    async (store) => {
      const r = (await getWrappedKey(store.db, keyIdOfRef(ref)))!;
      await upsertWrappedKey(store.db, { ...insertOf(r), wrapped: Buffer.from([0x00, 0xff, 0x13, 0x37, 0x0a, 0x42]) });
    };
  /** Another valid key stored (wrapped by the same KEK) in place of the recorded one; a CA keeps its certificate. */
  const replaceKey =
    (ref: KeyRef, pem: string): Change =>
    async (store) => {
      const before = await getWrappedKey(store.db, keyIdOfRef(ref));
      await defaultWrappedKeys(store.db, dir).put(ref, createPrivateKey(pem), before?.certificate ? { certificate: before.certificate } : {});
    };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-keys-'));
    const store = await openStore({ pgliteDir: join(dir, 'db') });
    try {
      await migrateToLatest(store);
      tenant = await ensureDefaultTenant(store.db);
      // the embedded default KEK, generated beside the data dir as the server process does
      const repo = new SigningRepository({ db: store.db, dataDir: dir });
      await repo.ensureTenantRepo(tenant);
      await new DeviceCaStore(store.db, repo.wrappedKeys).get(tenant, new Date());
      await ensureServerTls(repo.wrappedKeys, [], new Date());
      deviceCaKeyFile = (await getDeviceCa(store.db, tenant))!.keyFile;
      // the evidence key as its first export records it
      const evidence = await firstEvidenceKey(repo.wrappedKeys, tenant);
      await runUnitOfWork(store.db, { tenant, actor: systemActor('test'), now: new Date() }, (uow) =>
        recordFirstEvidenceKey(uow, {
          keyid: evidence.key.keyid,
          publicKeyPem: evidence.key.publicKeyPem,
          ...(evidence.store ? { store: evidence.store } : {}),
        }),
      );
      pristine = await allWrappedKeys(store.db);
    } finally {
      await store.close();
    }
    const tufKey = (role: string): KeyFile => ({
      label: `TUF ${role} key`,
      ref: { tenantId: tenant, name: `tuf/${role}` },
      otherKey: () => Promise.resolve(generateSigningKey().pem),
      required: role !== 'root',
      perTenant: true,
    });
    const caKey = async () => (await createCa('another CA', new Date(), 10)).keyPem;
    keyFiles = [
      tufKey('root'),
      tufKey('targets'),
      tufKey('snapshot'),
      tufKey('timestamp'),
      { label: 'device CA key', ref: deviceCaKeyRef(tenant, deviceCaKeyFile), otherKey: caKey, required: true, perTenant: true },
      { label: 'server CA key', ref: SERVER_CA_KEY_REF, otherKey: caKey, required: true, perTenant: false },
      {
        label: 'evidence key 1 \\(sha256:[0-9a-f]{64}\\)',
        ref: { tenantId: tenant, name: 'evidence/evidence' },
        otherKey: () => Promise.resolve(generateSigningKey().pem),
        required: true,
        perTenant: true,
      },
    ];
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(`${dir}.kek`, { force: true });
  });

  const failureLine = (k: KeyFile, what: string) =>
    new RegExp(`^svc-server: key check failed: ${k.label}${k.perTenant ? ` of tenant ${tenant}` : ''} ${what}.*docs/server\\.md#keys-and-their-integrity$`);

  const expectRefused = (r: { code: number | null; stderr: string }, k: KeyFile, what: string) => {
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(failureLine(k, what));
  };

  it('every key in place: `check` exits 0 and lists what it checked', async () => {
    await change(restore);
    const r = await runMain(['check'], { SVC_DATA_DIR: dir });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    for (const label of ['TUF root key', 'TUF targets key', 'TUF snapshot key', 'TUF timestamp key', 'device CA key', 'server CA key', 'evidence key 1']) {
      expect(r.stdout).toContain(label);
    }
    // the same check through the package's binary, as an operator runs it (pnpm exec svc-server check)
    const bin = await new Promise<number | null>((resolve) => {
      const child = spawn(join(import.meta.dirname, '..', '..', '..', '..', 'node_modules', '.bin', 'svc-server'), ['check'], {
        env: { PATH: process.env.PATH ?? '', SVC_DATA_DIR: dir, SVC_LOG_LEVEL: 'warn' },
        stdio: 'ignore',
      });
      child.on('exit', resolve);
    });
    expect(bin).toBe(0);
  }, 180_000);

  it('a deleted wrapped key fails the start and `check` with exit 2 and one line naming it', async () => {
    for (const k of keyFiles) {
      await change(restore, removeKey(k.ref));
      if (!k.required) {
        // the root key exported into offline custody: nothing is wrong
        expect((await runMain(['check'], { SVC_DATA_DIR: dir })).code, k.label).toBe(0);
        continue;
      }
      expectRefused(await runMain([], { SVC_DATA_DIR: dir, ...admin }), k, 'is missing');
      expectRefused(await runMain(['check'], { SVC_DATA_DIR: dir }), k, 'is missing');
    }
  }, 240_000);

  it('a wrapped key of garbage bytes (the KEK does not open it) fails the start with exit 2 and one line naming it', async () => {
    for (const k of keyFiles) {
      await change(restore, garbleKey(k.ref));
      expectRefused(await runMain([], { SVC_DATA_DIR: dir, ...admin }), k, 'is unreadable');
    }
  }, 240_000);

  it('another valid key in place of the recorded one fails the start with exit 2 and one line naming it', async () => {
    for (const k of keyFiles) {
      await change(restore, replaceKey(k.ref, await k.otherKey()));
      expectRefused(await runMain([], { SVC_DATA_DIR: dir, ...admin }), k, 'does not match');
    }
  }, 240_000);

  it('SVC_KEY_RECOVERY=evidence-rotate,device-ca-rotate retires a lost evidence key and a lost device CA key through their audited rotations; the next start needs no recovery', async () => {
    await change(restore, removeKey({ tenantId: tenant, name: 'evidence/evidence' }), removeKey(deviceCaKeyRef(tenant, deviceCaKeyFile)));
    const refused = await runMain(['check'], { SVC_DATA_DIR: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/SVC_KEY_RECOVERY=device-ca-rotate/);
    const m = await startMain({ SVC_DATA_DIR: dir, SVC_KEY_RECOVERY: 'device-ca-rotate, evidence-rotate', SVC_LOG_LEVEL: 'info', ...admin });
    try {
      expect(m.output()).toMatch(/evidence key rotated/);
      expect(m.output()).toMatch(new RegExp(`device CA rotated: tenant ${tenant}, CA 1 retired \\(trusted until [^)]+\\), CA 2 current`));
    } finally {
      expect(await stopMain(m.child)).toBe(0);
    }
    const store = await openStore({ pgliteDir: join(dir, 'db') });
    try {
      const keys = await store.db.selectFrom('evidence_keys').select(['seq', 'valid_until']).where('tenant_id', '=', tenant).orderBy('seq').execute();
      expect(keys.map((k) => [k.seq, k.valid_until === null])).toEqual([
        [1, false],
        [2, true],
      ]);
      const cas = await store.db.selectFrom('device_cas').select(['seq', 'retired_at', 'retired_by']).where('tenant_id', '=', tenant).orderBy('seq').execute();
      expect(cas.map((c) => [c.seq, c.retired_at === null, c.retired_by])).toEqual([
        [1, false, 'system:key-recovery'],
        [2, true, null],
      ]);
      const audit = await store.db
        .selectFrom('audit_events')
        .select(['action', 'actor'])
        .where('action', 'in', ['evidence-key.rotate', 'device-ca.rotate'])
        .orderBy('action')
        .execute();
      expect(audit).toEqual([
        { action: 'device-ca.rotate', actor: 'system:key-recovery' },
        { action: 'evidence-key.rotate', actor: 'system:key-recovery' },
      ]);
    } finally {
      await store.close();
    }
    const after = await runMain(['check'], { SVC_DATA_DIR: dir });
    expect(after.stderr).toBe('');
    expect(after.code).toBe(0);
    // the pristine rows now hold the retired keys: take the new ones for what follows
    pristine = await withStore((s) => allWrappedKeys(s.db));
  }, 120_000);

  // last: the recovery changes the database, which `restore` does not put back
  it('SVC_KEY_RECOVERY=tuf-online-rotate replaces lost TUF online keys through a root update; the next start needs no recovery', async () => {
    await change(
      restore,
      removeKey({ tenantId: tenant, name: 'tuf/targets' }),
      replaceKey({ tenantId: tenant, name: 'tuf/timestamp' }, generateSigningKey().pem),
    );
    const refused = await runMain(['check'], { SVC_DATA_DIR: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/SVC_KEY_RECOVERY=tuf-online-rotate/);

    const m = await startMain({ SVC_DATA_DIR: dir, SVC_KEY_RECOVERY: 'tuf-online-rotate', SVC_LOG_LEVEL: 'info', ...admin });
    try {
      expect(m.output()).toMatch(/TUF online keys rotated/);
    } finally {
      expect(await stopMain(m.child)).toBe(0);
    }
    const store = await openStore({ pgliteDir: join(dir, 'db') });
    try {
      const roots = await store.db.selectFrom('tuf_metadata').select('version').where('tenant_id', '=', tenant).where('role', '=', 'root').execute();
      expect(roots.map((r) => r.version).sort()).toEqual([1, 2]);
    } finally {
      await store.close();
    }
    const after = await runMain(['check'], { SVC_DATA_DIR: dir });
    expect(after.stderr).toBe('');
    expect(after.code).toBe(0);

    // without the root key there is nothing to sign the root update with: the start still fails, naming it
    await change(removeKey({ tenantId: tenant, name: 'tuf/root' }), removeKey({ tenantId: tenant, name: 'tuf/snapshot' }));
    const noRoot = await runMain([], { SVC_DATA_DIR: dir, SVC_KEY_RECOVERY: 'tuf-online-rotate', ...admin });
    expect(noRoot.code).toBe(2);
    expect(noRoot.stderr.trim().split('\n')).toHaveLength(1);
    expect(noRoot.stderr).toMatch(new RegExp(`^svc-server: key check failed: TUF snapshot key of tenant ${tenant} is missing.*root key`));
  }, 120_000);
});

const pgUrl = process.env.SVC_TEST_DATABASE_URL;

describe.skipIf(!built || !pgUrl)('key integrity of a running node dist/main.js on PostgreSQL', () => {
  let dir: string;
  const schema = `t_keys_${process.pid}_${Date.now() % 100000}`;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-keys-pg-'));
    await writeFile(`${dir}.kek`, randomBytes(32), { mode: 0o600 });
  });
  afterAll(async () => {
    await dropSchemaAt(pgUrl!, schema);
    await rm(dir, { recursive: true, force: true });
    await rm(`${dir}.kek`, { force: true });
  });

  it('a TUF targets key deleted from the database while the server runs: publishing answers 503 KEY_UNAVAILABLE naming it', async () => {
    const m = await startMain({ SVC_DATA_DIR: dir, SVC_DATABASE_URL: pgUrl!, SVC_DATABASE_SCHEMA: schema, SVC_KEK_FILE: `${dir}.kek`, ...admin });
    const store = await openStore({ databaseUrl: pgUrl!, schema });
    try {
      const login = await fetch(`${m.url}/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: admin.SVC_ADMIN_EMAIL, password: admin.SVC_ADMIN_PASSWORD }),
      });
      expect(login.status).toBe(204);
      const cookie = /svc_session=[^;]+/.exec(login.headers.get('set-cookie') ?? '')![0];
      const publish = (version: string) => {
        const { payload, contentType } = artifactMultipart({ name: 'fw', version, kind: 'model', bytes: `weights ${version}` });
        return fetch(`${m.url}/artifacts`, { method: 'POST', headers: { cookie, 'x-svc-csrf': '1', 'content-type': contentType }, body: payload });
      };
      expect((await publish('1.0.0')).status).toBe(201);
      const tenant = (await store.db.selectFrom('tenants').select('id').executeTakeFirstOrThrow()).id;
      const saved = (await getWrappedKey(store.db, `${tenant}/tuf/targets`))!;
      await deleteWrappedKey(store.db, saved.key_id);
      const res = await publish('1.0.1');
      expect(res.status).toBe(503);
      const body = (await res.json()) as { error: string };
      expect(body.error).toMatch(new RegExp(`^KEY_UNAVAILABLE: TUF targets key of tenant ${tenant} is missing`));
      // a key that comes back makes the same request succeed
      await insertRow(store.db, saved);
      expect((await publish('1.0.1')).status).toBe(201);
    } finally {
      await store.close();
      expect(await stopMain(m.child)).toBe(0);
    }
  }, 120_000);
});

function insertOf(r: WrappedKeyRow) {
  return {
    keyId: r.key_id,
    tenantId: r.tenant_id,
    name: r.name,
    publicKeyId: r.public_key_id,
    ...(r.certificate ? { certificate: r.certificate } : {}),
    wrapAlg: r.wrap_alg,
    kekId: r.kek_id,
    wrapped: r.wrapped,
  };
}

function insertRow(db: Db, r: WrappedKeyRow): Promise<boolean> {
  return insertWrappedKey(db, insertOf(r));
}
