/**
 * The data directory of the key integrity suites (platform-key-integrity*.test.ts): a real
 * server's data dir on the embedded database, with every key the database records (the TUF
 * keys, the device CA, the server CA, the first evidence key), a pristine copy of its key files
 * that `restore()` puts back before each case, and `runMain` for `node dist/main.js [...args]`.
 *
 *   const k = keyIntegrityFixture();   // registers beforeAll/afterAll
 *   await k.restore(); await unlink(join(k.dir, k.keyFiles[1]!.path));
 *   k.expectRefused(await runMain([], { SVC_DATA_DIR: k.dir, ...KEY_ADMIN }), k.keyFiles[1]!, 'is missing');
 *
 * The suites are split by what they break so that their processes (each a full start of the
 * server) spread over the package's workers instead of queueing in one file.
 */
import { spawn } from 'node:child_process';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { DeviceCaStore } from '../../src/device-channel/device-ca.js';
import { createCa } from '../../src/device-channel/pki.js';
import { ensureServerTls } from '../../src/device-channel/server-tls.js';
import { getDeviceCa } from '../../src/resources/device-ca/queries.js';
import { ensureDefaultTenant } from '../../src/resources/tenants/queries.js';
import { recordFirstEvidenceKey } from '../../src/resources/case-exports/commands.js';
import { loadOrCreateEvidenceKeyFile } from '../../src/resources/case-exports/evidence-key.js';
import { runUnitOfWork, systemActor } from '../../src/resources/unit-of-work.js';
import { generateSigningKey } from '../../src/signing-repo/keys.js';
import { SigningRepository } from '../../src/signing-repo/repository.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { openStore } from '../../src/store/open.js';
import { MAIN_JS } from './main-process.js';
import { seedPgliteCluster } from './store.js';

export const KEY_ADMIN = { SVC_ADMIN_EMAIL: 'root@example.test', SVC_ADMIN_PASSWORD: 'password123' };

/**
 * Backstop of a case that runs `runs` server processes one after another: each start loads the
 * whole server and its embedded database (several seconds of CPU), far longer on a busy machine.
 */
export const forRuns = (runs: number): number => 60_000 * runs;

/** Runs `node dist/main.js [...args]` to its exit (a start that fails, or `check`). */
export function runMain(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN_JS, ...args], {
      env: { PATH: process.env.PATH ?? '', SVC_HTTP_ADDR: '127.0.0.1:0', SVC_DEVICE_ADDR: '127.0.0.1:0', SVC_LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // a start that wrongly succeeds prints its listening line: it is stopped, so the test fails on its status instead of hanging
    child.stdout.on('data', () => {
      if (/svc-server: http listening on /.test(stdout)) child.kill('SIGTERM');
    });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface KeyFile {
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

export interface KeyIntegrityFixture {
  readonly dir: string;
  readonly pristine: string;
  readonly tenant: string;
  readonly keyFiles: KeyFile[];
  readonly deviceCaKeyFile: string;
  /** Puts every key file back as the data dir was made (from the pristine copy). */
  restore(): Promise<void>;
  /** Exit status 2 and one stderr line naming `k` and `what` happened to it. */
  expectRefused(r: { code: number | null; stderr: string }, k: KeyFile, what: string): void;
}

export function keyIntegrityFixture(): KeyIntegrityFixture {
  const f = {} as { -readonly [K in keyof KeyIntegrityFixture]: KeyIntegrityFixture[K] };
  f.restore = async () => {
    for (const sub of ['keys', 'ca']) {
      await rm(join(f.dir, sub), { recursive: true, force: true });
      await cp(join(f.pristine, sub), join(f.dir, sub), { recursive: true });
    }
  };
  const failureLine = (k: KeyFile, what: string) =>
    new RegExp(`^svc-server: key check failed: ${k.label}${k.perTenant ? ` of tenant ${f.tenant}` : ''} ${what}.*docs/server\\.md#keys-and-their-integrity$`);
  f.expectRefused = (r, k, what) => {
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(failureLine(k, what));
  };

  beforeAll(async () => {
    f.dir = await mkdtemp(join(tmpdir(), 'svc-keys-'));
    f.pristine = await mkdtemp(join(tmpdir(), 'svc-keys-pristine-'));
    // the cluster a first start's initdb leaves; then what that start makes, through the same modules
    await seedPgliteCluster(f.dir);
    const store = await openStore({ pgliteDir: join(f.dir, 'db') });
    try {
      await migrateToLatest(store);
      f.tenant = await ensureDefaultTenant(store.db);
      await new SigningRepository({ db: store.db, dataDir: f.dir }).ensureTenantRepo(f.tenant);
      await new DeviceCaStore(store.db, f.dir).get(f.tenant, new Date());
      await ensureServerTls(f.dir, [], new Date());
      f.deviceCaKeyFile = (await getDeviceCa(store.db, f.tenant))!.keyFile;
      // the evidence key as its first export records it
      const evidence = await loadOrCreateEvidenceKeyFile(join(f.dir, 'keys'), f.tenant);
      await runUnitOfWork(store.db, { tenant: f.tenant, actor: systemActor('test'), now: new Date() }, (uow) =>
        recordFirstEvidenceKey(uow, { keyid: evidence.keyid, publicKeyPem: evidence.publicKeyPem }),
      );
    } finally {
      await store.close();
    }
    for (const sub of ['keys', 'ca']) await cp(join(f.dir, sub), join(f.pristine, sub), { recursive: true });
    const tufKey = (role: string): KeyFile => ({
      label: `TUF ${role} key`,
      path: join('keys', f.tenant, `${role}.pem`),
      otherKey: () => Promise.resolve(generateSigningKey().pem),
      required: role !== 'root',
      perTenant: true,
    });
    const caKey = async () => (await createCa('another CA', new Date(), 10)).keyPem;
    f.keyFiles = [
      tufKey('root'),
      tufKey('targets'),
      tufKey('snapshot'),
      tufKey('timestamp'),
      { label: 'device CA key', path: join('ca', f.tenant, f.deviceCaKeyFile), otherKey: caKey, required: true, perTenant: true },
      { label: 'server CA key', path: join('ca', 'server', 'ca.key'), otherKey: caKey, required: true, perTenant: false },
      {
        label: 'evidence key 1 \\(sha256:[0-9a-f]{64}\\)',
        path: join('keys', f.tenant, 'evidence.pem'),
        otherKey: () => Promise.resolve(generateSigningKey().pem),
        required: true,
        perTenant: true,
      },
    ];
  }, 120_000);
  afterAll(async () => {
    if (f.dir) await rm(f.dir, { recursive: true, force: true });
    if (f.pristine) await rm(f.pristine, { recursive: true, force: true });
  });
  return f;
}
