/**
 * The real server process (`node dist/main.js`) on a data dir whose key files were deleted or
 * corrupted while the database stayed intact: the start (and `node dist/main.js check`) fails
 * with exit status 2 and one line naming the key and its tenant; with every key in place the
 * check passes; SVC_KEY_RECOVERY=tuf-online-rotate replaces lost TUF online keys through a
 * root update signed by the root key, SVC_KEY_RECOVERY=evidence-rotate,device-ca-rotate retires
 * a lost evidence key and a lost device CA key through their audited rotations (the device
 * side of the CA rotation is device-channel-ca-rotation.test.ts); and a TUF key that disappears while the server runs
 * makes a publish answer 503 KEY_UNAVAILABLE naming it. Needs the build.
 */
import { spawn } from 'node:child_process';
import { cp, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeviceCaStore } from '../src/device-channel/device-ca.js';
import { createCa } from '../src/device-channel/pki.js';
import { ensureServerTls } from '../src/device-channel/server-tls.js';
import { getDeviceCa } from '../src/resources/device-ca/queries.js';
import { ensureDefaultTenant } from '../src/resources/tenants/queries.js';
import { recordFirstEvidenceKey } from '../src/resources/case-exports/commands.js';
import { loadOrCreateEvidenceKeyFile } from '../src/resources/case-exports/evidence-key.js';
import { runUnitOfWork, systemActor } from '../src/resources/unit-of-work.js';
import { generateSigningKey } from '../src/signing-repo/keys.js';
import { SigningRepository } from '../src/signing-repo/repository.js';
import { migrateToLatest } from '../src/store/migrate.js';
import { openStore } from '../src/store/open.js';
import { MAIN_JS, mainBuilt, startMain, stopMain } from './helpers/main-process.js';
import { artifactMultipart } from './pipeline-fixture.js';

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
  /** Relative to the data dir. */
  path: string;
  /** Another valid key of the same kind (not the one the database records). */
  otherKey(): Promise<string>;
  /** False for a key whose absence is legitimate (the TUF root key in offline custody). */
  required: boolean;
  perTenant: boolean;
}

describe.skipIf(!built)('key integrity of node dist/main.js', () => {
  let dir: string;
  let pristine: string;
  let tenant: string;
  let keyFiles: KeyFile[];
  let deviceCaKeyFile: string;

  const restore = async () => {
    for (const sub of ['keys', 'ca']) {
      await rm(join(dir, sub), { recursive: true, force: true });
      await cp(join(pristine, sub), join(dir, sub), { recursive: true });
    }
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-keys-'));
    pristine = await mkdtemp(join(tmpdir(), 'svc-keys-pristine-'));
    const store = await openStore({ pgliteDir: join(dir, 'db') });
    try {
      await migrateToLatest(store);
      tenant = await ensureDefaultTenant(store.db);
      await new SigningRepository({ db: store.db, dataDir: dir }).ensureTenantRepo(tenant);
      await new DeviceCaStore(store.db, dir).get(tenant, new Date());
      await ensureServerTls(dir, [], new Date());
      deviceCaKeyFile = (await getDeviceCa(store.db, tenant))!.keyFile;
      // the evidence key as its first export records it
      const evidence = await loadOrCreateEvidenceKeyFile(join(dir, 'keys'), tenant);
      await runUnitOfWork(store.db, { tenant, actor: systemActor('test'), now: new Date() }, (uow) =>
        recordFirstEvidenceKey(uow, { keyid: evidence.keyid, publicKeyPem: evidence.publicKeyPem }),
      );
    } finally {
      await store.close();
    }
    for (const sub of ['keys', 'ca']) await cp(join(dir, sub), join(pristine, sub), { recursive: true });
    const tufKey = (role: string): KeyFile => ({
      label: `TUF ${role} key`,
      path: join('keys', tenant, `${role}.pem`),
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
      { label: 'device CA key', path: join('ca', tenant, deviceCaKeyFile), otherKey: caKey, required: true, perTenant: true },
      { label: 'server CA key', path: join('ca', 'server', 'ca.key'), otherKey: caKey, required: true, perTenant: false },
      {
        label: 'evidence key 1 \\(sha256:[0-9a-f]{64}\\)',
        path: join('keys', tenant, 'evidence.pem'),
        otherKey: () => Promise.resolve(generateSigningKey().pem),
        required: true,
        perTenant: true,
      },
    ];
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(pristine, { recursive: true, force: true });
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
    await restore();
    const r = await runMain(['check'], { SVC_DATA_DIR: dir });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    for (const label of ['TUF root key', 'TUF targets key', 'TUF snapshot key', 'TUF timestamp key', 'device CA key', 'server CA key', 'evidence key 1']) {
      expect(r.stdout).toContain(label);
    }
    // the same check through the package's binary, as an operator runs it (pnpm exec svc-server check)
    const bin = await new Promise<number | null>((resolve) => {
      const child = spawn(join(import.meta.dirname, '..', '..', '..', 'node_modules', '.bin', 'svc-server'), ['check'], {
        env: { PATH: process.env.PATH ?? '', SVC_DATA_DIR: dir, SVC_LOG_LEVEL: 'warn' },
        stdio: 'ignore',
      });
      child.on('exit', resolve);
    });
    expect(bin).toBe(0);
  }, 180_000);

  it('a deleted key file fails the start and `check` with exit 2 and one line naming it', async () => {
    for (const k of keyFiles) {
      await restore();
      await unlink(join(dir, k.path));
      if (!k.required) {
        // the root key exported into offline custody: nothing is wrong
        expect((await runMain(['check'], { SVC_DATA_DIR: dir })).code, k.label).toBe(0);
        continue;
      }
      expectRefused(await runMain([], { SVC_DATA_DIR: dir, ...admin }), k, 'is missing');
      expectRefused(await runMain(['check'], { SVC_DATA_DIR: dir }), k, 'is missing');
    }
  }, 240_000);

  it('a key file of garbage bytes fails the start with exit 2 and one line naming it', async () => {
    for (const k of keyFiles) {
      await restore();
      await writeFile(join(dir, k.path), Buffer.from([0x00, 0xff, 0x13, 0x37, 0x0a, 0x42]));
      expectRefused(await runMain([], { SVC_DATA_DIR: dir, ...admin }), k, 'is unreadable');
    }
  }, 240_000);

  it('another valid key in place of the recorded one fails the start with exit 2 and one line naming it', async () => {
    for (const k of keyFiles) {
      await restore();
      await writeFile(join(dir, k.path), await k.otherKey());
      expectRefused(await runMain([], { SVC_DATA_DIR: dir, ...admin }), k, 'does not match');
    }
  }, 240_000);

  it('a TUF targets key deleted while the server runs: publishing answers 503 KEY_UNAVAILABLE naming it', async () => {
    await restore();
    const m = await startMain({ SVC_DATA_DIR: dir, ...admin });
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
      await unlink(join(dir, 'keys', tenant, 'targets.pem'));
      const res = await publish('1.0.1');
      expect(res.status).toBe(503);
      const body = (await res.json()) as { error: string };
      expect(body.error).toMatch(new RegExp(`^KEY_UNAVAILABLE: TUF targets key of tenant ${tenant} is missing`));
      // a key that comes back makes the same request succeed
      await cp(join(pristine, 'keys', tenant, 'targets.pem'), join(dir, 'keys', tenant, 'targets.pem'));
      expect((await publish('1.0.1')).status).toBe(201);
    } finally {
      expect(await stopMain(m.child)).toBe(0);
    }
  }, 120_000);
  it('SVC_KEY_RECOVERY=evidence-rotate,device-ca-rotate retires a lost evidence key and a lost device CA key through their audited rotations; the next start needs no recovery', async () => {
    await restore();
    await unlink(join(dir, 'keys', tenant, 'evidence.pem'));
    await unlink(join(dir, 'ca', tenant, deviceCaKeyFile));
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
    // the pristine copy now holds the retired keys: put the new ones there for what follows
    await cp(join(dir, 'keys', tenant, 'evidence.pem'), join(pristine, 'keys', tenant, 'evidence.pem'));
    await cp(join(dir, 'ca'), join(pristine, 'ca'), { recursive: true });
  }, 120_000);

  // last: the recovery changes the database, which restore() does not put back
  it('SVC_KEY_RECOVERY=tuf-online-rotate replaces lost TUF online keys through a root update; the next start needs no recovery', async () => {
    await restore();
    await unlink(join(dir, 'keys', tenant, 'targets.pem'));
    await writeFile(join(dir, 'keys', tenant, 'timestamp.pem'), generateSigningKey().pem);
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
    await unlink(join(dir, 'keys', tenant, 'root.pem'));
    await unlink(join(dir, 'keys', tenant, 'snapshot.pem'));
    const noRoot = await runMain([], { SVC_DATA_DIR: dir, SVC_KEY_RECOVERY: 'tuf-online-rotate', ...admin });
    expect(noRoot.code).toBe(2);
    expect(noRoot.stderr.trim().split('\n')).toHaveLength(1);
    expect(noRoot.stderr).toMatch(new RegExp(`^svc-server: key check failed: TUF snapshot key of tenant ${tenant} is missing.*root key`));
  }, 120_000);
});
