/**
 * Key custody: every private key wrapped by a KEK (src/key-custody). The file KEK and a real
 * SoftHSM2 token (skipped loudly where softhsm2 is missing, never when CI=true); plain key
 * files of an older data directory wrapped, verified and removed; `rewrapAllKeys` moving every
 * key to a new KEK after which the old one opens nothing; and, after a device enrolled and the
 * repository signed, no file under the data directory holding a private key in any form.
 * Storage on both drivers.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { EnrollResponse } from '@svc/device-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCa } from '../../src/device-channel/pki.js';
import { FileKek, openFileKek } from '../../src/key-custody/file-kek.js';
import { importPlainKeyFiles } from '../../src/key-custody/import-plain-keys.js';
import { KekError, type Kek } from '../../src/key-custody/kek.js';
import { kekSourceFromEnv } from '../../src/key-custody/kek-source.js';
import { Pkcs11Kek } from '../../src/key-custody/pkcs11-kek.js';
import { allWrappedKeys } from '../../src/key-custody/queries.js';
import { rewrapAllKeys } from '../../src/key-custody/rewrap.js';
import { WrappedKeys } from '../../src/key-custody/wrapped-keys.js';
import { createTenant } from '../../src/resources/tenants/queries.js';
import { generateSigningKey } from '../../src/signing-repo/keys.js';
import { channelCredentials, clientsFor, csrFor, newDeviceKey, startChannelFixture, unary, type ChannelFixture } from '../fixtures/device-channel.js';
import { MAIN_JS, mainBuilt, startMain, stopMain } from '../helpers/main-process.js';
import { availableDrivers, createTestStore, type TestStore } from '../helpers/store.js';

const SOFTHSM_MODULE = [
  '/usr/lib/softhsm/libsofthsm2.so',
  '/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so',
  '/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so',
].find((p) => existsSync(p));
const haveSofthsm = SOFTHSM_MODULE !== undefined && hasTool('softhsm2-util') && hasTool('pkcs11-tool');
if (!haveSofthsm) {
  if (process.env.CI === 'true') throw new Error('softhsm2 and opensc (pkcs11-tool) are required when CI=true: scripts/install-system-deps.sh');
  console.warn('SKIPPED: SoftHSM2 key custody tests need softhsm2 and opensc (scripts/install-system-deps.sh)');
}
const havePkcs11js = canLoad('pkcs11js');
if (!havePkcs11js) {
  const why = 'the optional native package pkcs11js did not build (node-gyp needs Node headers: scripts/install-system-deps.sh seeds them)';
  if (process.env.CI === 'true') throw new Error(`SoftHSM2 key custody tests: ${why}`);
  console.warn(`SKIPPED: SoftHSM2 key custody tests: ${why}`);
}

function canLoad(name: string): boolean {
  try {
    createRequire(import.meta.url)(name);
    return true;
  } catch {
    return false;
  }
}

function hasTool(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A fresh SoftHSM2 token in a temp dir with an AES-256 KEK made by pkcs11-tool (as an operator would). */
async function softhsmToken(label: string, keyLabels: string[]): Promise<{ dir: string; module: string; pinFile: string; env: NodeJS.ProcessEnv }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-softhsm-'));
  await mkdir(join(dir, 'tokens'));
  await writeFile(join(dir, 'softhsm2.conf'), `directories.tokendir = ${join(dir, 'tokens')}\nobjectstore.backend = file\nlog.level = ERROR\n`);
  const env = { ...process.env, SOFTHSM2_CONF: join(dir, 'softhsm2.conf') };
  // the module reads SOFTHSM2_CONF when loaded into this process too
  process.env.SOFTHSM2_CONF = env.SOFTHSM2_CONF;
  execFileSync('softhsm2-util', ['--init-token', '--free', '--label', label, '--pin', '1234', '--so-pin', '5678'], { env, stdio: 'pipe' });
  for (const keyLabel of keyLabels) {
    execFileSync(
      'pkcs11-tool',
      ['--module', SOFTHSM_MODULE!, '--token-label', label, '--login', '--pin', '1234', '--keygen', '--key-type', 'AES:32', '--label', keyLabel, '--sensitive'],
      { env, stdio: 'pipe' },
    );
  }
  const pinFile = join(dir, 'pin');
  await writeFile(pinFile, '1234\n', { mode: 0o600 });
  return { dir, module: SOFTHSM_MODULE!, pinFile, env };
}

function pkcs8(k: KeyObject): Buffer {
  return k.export({ format: 'der', type: 'pkcs8' });
}

describe('the file KEK', () => {
  it('wraps with AES-256-GCM bound to the key id, and refuses a KEK file inside the data directory', async () => {
    const kek = new FileKek(randomBytes(32));
    const plain = randomBytes(48);
    const wrapped = await kek.wrap(plain, Buffer.from('t/tuf/targets'));
    expect(wrapped.length).toBe(12 + 48 + 16);
    expect((await kek.unwrap(wrapped, Buffer.from('t/tuf/targets'))).equals(plain)).toBe(true);
    // another row's id, or another KEK, opens nothing
    await expect(kek.unwrap(wrapped, Buffer.from('t/tuf/snapshot'))).rejects.toThrow(KekError);
    await expect(new FileKek(randomBytes(32)).unwrap(wrapped, Buffer.from('t/tuf/targets'))).rejects.toThrow(KekError);

    const dataDir = await mkdtemp(join(tmpdir(), 'svc-kek-data-'));
    try {
      await expect(openFileKek(join(dataDir, 'kek'), dataDir, { create: true })).rejects.toThrow(/lies inside the data directory/);
      await writeFile(`${dataDir}.short`, randomBytes(16));
      await expect(openFileKek(`${dataDir}.short`, dataDir)).rejects.toThrow(/exactly 32 random bytes/);
      const made = await openFileKek(`${dataDir}.kek`, dataDir, { create: true });
      expect((await stat(`${dataDir}.kek`)).mode & 0o777).toBe(0o600);
      // opened again (another process, the next start): the same KEK
      expect((await openFileKek(`${dataDir}.kek`, dataDir)).id).toBe(made.id);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
      await rm(`${dataDir}.kek`, { force: true });
      await rm(`${dataDir}.short`, { force: true });
    }
  });

  it('settings: PostgreSQL without a KEK is refused; the embedded database gets one generated beside the data directory', () => {
    expect(() => kekSourceFromEnv({}, { dataDir: '/srv/svc/data', postgres: true })).toThrow(
      /^SVC_KEK_FILE or SVC_KEK_PKCS11_MODULE: required with SVC_DATABASE_URL/,
    );
    expect(kekSourceFromEnv({}, { dataDir: '/srv/svc/data', postgres: false })).toEqual({ kind: 'generated', path: '/srv/svc/data.kek' });
    expect(() => kekSourceFromEnv({ SVC_KEK_FILE: '/k', SVC_KEK_PKCS11_MODULE: '/m.so' }, { dataDir: '/d', postgres: true })).toThrow(/set one KEK source/);
    expect(() => kekSourceFromEnv({ SVC_KEK_PKCS11_MODULE: '/m.so', SVC_KEK_PKCS11_PIN_FILE: '/p' }, { dataDir: '/d', postgres: true })).toThrow(
      /^SVC_KEK_PKCS11_TOKEN: required/,
    );
    expect(
      kekSourceFromEnv({ SVC_KEK_PKCS11_MODULE: '/m.so', SVC_KEK_PKCS11_TOKEN: 'svc', SVC_KEK_PKCS11_PIN_FILE: '/p' }, { dataDir: '/d', postgres: true }),
    ).toEqual({
      kind: 'pkcs11',
      module: '/m.so',
      token: 'svc',
      keyLabel: 'svc-kek',
      pinFile: '/p',
    });
  });
});

describe.skipIf(!haveSofthsm || !havePkcs11js)('the PKCS#11 KEK on a real SoftHSM2 token', () => {
  let token: Awaited<ReturnType<typeof softhsmToken>>;
  beforeAll(async () => {
    token = await softhsmToken('svc-test', ['svc-kek', 'svc-kek-2']);
  });
  afterAll(async () => {
    await rm(token.dir, { recursive: true, force: true });
  });

  it('wraps inside the token with CKM_AES_GCM; a wrong PIN, token or key label is a clear KekError', async () => {
    const kek = await Pkcs11Kek.open({ module: token.module, token: 'svc-test', keyLabel: 'svc-kek', pinFile: token.pinFile });
    try {
      expect(kek.id).toBe('pkcs11:svc-test/svc-kek');
      const plain = randomBytes(100);
      const wrapped = await kek.wrap(plain, Buffer.from('x/y'));
      expect(wrapped.length).toBe(12 + 100 + 16);
      expect((await kek.unwrap(wrapped, Buffer.from('x/y'))).equals(plain)).toBe(true);
      await expect(kek.unwrap(wrapped, Buffer.from('x/z'))).rejects.toThrow(KekError);
    } finally {
      await kek.close();
    }
    const badPin = join(token.dir, 'bad-pin');
    await writeFile(badPin, '0000\n');
    await expect(Pkcs11Kek.open({ module: token.module, token: 'svc-test', keyLabel: 'svc-kek', pinFile: badPin })).rejects.toThrow(
      /login to token "svc-test" refused/,
    );
    await expect(Pkcs11Kek.open({ module: token.module, token: 'nope', keyLabel: 'svc-kek', pinFile: token.pinFile })).rejects.toThrow(
      /no token labelled "nope"/,
    );
    await expect(Pkcs11Kek.open({ module: token.module, token: 'svc-test', keyLabel: 'absent', pinFile: token.pinFile })).rejects.toThrow(
      /holds 0 AES keys labelled "absent"/,
    );
  });

  describe.each(availableDrivers())('stored on %s', (driver) => {
    let t: TestStore;
    beforeAll(async () => {
      t = await createTestStore(driver);
    });
    afterAll(async () => {
      await t.dispose();
    });

    it('rewrap from a key file to the token and on to another token key: each old KEK opens nothing afterwards', async () => {
      const tenant = await createTenant(t.store.db, 'hsm');
      const fileKek = new FileKek(randomBytes(32));
      const key = generateSigningKey();
      await new WrappedKeys(t.store.db, fileKek).put({ tenantId: tenant, name: 'tuf/targets' }, key.privateKey);
      const hsm = await Pkcs11Kek.open({ module: token.module, token: 'svc-test', keyLabel: 'svc-kek', pinFile: token.pinFile });
      const hsm2 = await Pkcs11Kek.open({ module: token.module, token: 'svc-test', keyLabel: 'svc-kek-2', pinFile: token.pinFile });
      try {
        expect(await rewrapAllKeys(t.store.db, fileKek, hsm)).toEqual({ rewrapped: 1, already: 0 });
        const row = (await allWrappedKeys(t.store.db)).find((r) => r.tenant_id === tenant)!;
        expect([row.kek_id, row.wrap_alg]).toEqual(['pkcs11:svc-test/svc-kek', 'PKCS11-CKM_AES_GCM']);
        await expect(new WrappedKeys(t.store.db, fileKek).load({ tenantId: tenant, name: 'tuf/targets' })).rejects.toThrow(KekError);
        expect(pkcs8((await new WrappedKeys(t.store.db, hsm).load({ tenantId: tenant, name: 'tuf/targets' }))!.privateKey)).toEqual(pkcs8(key.privateKey));

        await rewrapAllKeys(t.store.db, hsm, hsm2);
        await expect(new WrappedKeys(t.store.db, hsm).load({ tenantId: tenant, name: 'tuf/targets' })).rejects.toThrow(
          /wrapped by KEK pkcs11:svc-test\/svc-kek-2/,
        );
        // the bytes themselves do not open under the old token key either (not only the recorded KEK id)
        const moved = (await allWrappedKeys(t.store.db)).find((r) => r.tenant_id === tenant)!;
        await expect(hsm.unwrap(Buffer.from(moved.wrapped), Buffer.from(moved.key_id))).rejects.toThrow(KekError);
        expect(pkcs8((await new WrappedKeys(t.store.db, hsm2).load({ tenantId: tenant, name: 'tuf/targets' }))!.privateKey)).toEqual(pkcs8(key.privateKey));
      } finally {
        await hsm.close();
        await hsm2.close();
      }
    });
  });
});

describe.each(availableDrivers())('wrapped keys on %s', (driver) => {
  let t: TestStore;
  beforeAll(async () => {
    t = await createTestStore(driver);
  });
  afterAll(async () => {
    await t.dispose();
  });

  it('a data directory of plain key files: each file wrapped, stored, verified, removed; a file the database contradicts stays', async () => {
    const tenant = await createTenant(t.store.db, 'legacy');
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-legacy-'));
    const kek = new FileKek(randomBytes(32));
    const keys = new WrappedKeys(t.store.db, kek);
    try {
      const tuf = Object.fromEntries(['root', 'targets', 'snapshot', 'timestamp', 'evidence'].map((r) => [r, generateSigningKey()]));
      await mkdir(join(dataDir, 'keys', tenant), { recursive: true });
      for (const [role, k] of Object.entries(tuf)) await writeFile(join(dataDir, 'keys', tenant, `${role}.pem`), k.pem, { mode: 0o600 });
      await writeFile(join(dataDir, 'keys', tenant, `.targets.${randomBytes(4).toString('hex')}.tmp`), generateSigningKey().pem);
      const deviceCa = await createCa('legacy device CA', new Date(), 10);
      await mkdir(join(dataDir, 'ca', tenant), { recursive: true });
      await writeFile(join(dataDir, 'ca', tenant, 'device-ca-0123456789abcdef.key'), deviceCa.keyPem);
      const serverCa = await createCa('legacy server CA', new Date(), 10);
      await mkdir(join(dataDir, 'ca', 'server'), { recursive: true });
      await writeFile(join(dataDir, 'ca', 'server', 'ca.key'), serverCa.keyPem);
      await writeFile(
        join(dataDir, 'ca', 'server', 'ca.pem'),
        `-----BEGIN CERTIFICATE-----\n${Buffer.from(serverCa.certDer).toString('base64')}\n-----END CERTIFICATE-----\n`,
      );

      const r = await importPlainKeyFiles(keys, dataDir);
      expect(r.conflicts).toEqual([]);
      expect(r.imported).toHaveLength(7);
      // nothing left but the public server CA certificate: the key files, the leftover temp file and the emptied directories are gone
      expect(await readdir(dataDir)).toEqual(['ca']);
      expect(await readdir(join(dataDir, 'ca'))).toEqual(['server']);
      expect(await readdir(join(dataDir, 'ca', 'server'))).toEqual(['ca.pem']);
      for (const [role, k] of Object.entries(tuf)) {
        const name = role === 'evidence' ? 'evidence/evidence' : `tuf/${role}`;
        expect(pkcs8((await keys.load({ tenantId: tenant, name }))!.privateKey)).toEqual(pkcs8(k.privateKey));
      }
      expect(pkcs8((await keys.load({ tenantId: tenant, name: 'device-ca/device-ca-0123456789abcdef.key' }))!.privateKey)).toEqual(
        pkcs8(createPrivateKey(deviceCa.keyPem)),
      );
      const server = (await keys.load({ tenantId: null, name: 'server-ca' }))!;
      expect(Buffer.from(server.certificate!)).toEqual(Buffer.from(serverCa.certDer));
      // every row is wrapped, never the PKCS#8 bytes themselves
      for (const row of await allWrappedKeys(t.store.db)) {
        if (row.tenant_id !== tenant && row.tenant_id !== null) continue;
        expect(row.kek_id).toBe(kek.id);
        expect(row.wrap_alg).toBe('A256GCM');
      }

      // a second data directory whose targets key differs from the stored one: left in place, reported
      const other = generateSigningKey();
      await mkdir(join(dataDir, 'keys', tenant), { recursive: true });
      await writeFile(join(dataDir, 'keys', tenant, 'targets.pem'), other.pem);
      const again = await importPlainKeyFiles(keys, dataDir);
      expect(again.imported).toEqual([]);
      expect(again.conflicts).toEqual([
        `${join(dataDir, 'keys', tenant, 'targets.pem')} holds another key than wrapped key ${tenant}/tuf/targets; left in place (the stored key is used)`,
      ]);
      expect(existsSync(join(dataDir, 'keys', tenant, 'targets.pem'))).toBe(true);
      expect(pkcs8((await keys.load({ tenantId: tenant, name: 'tuf/targets' }))!.privateKey)).toEqual(pkcs8(tuf['targets']!.privateKey));
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('rewrap moves every key in one transaction with a keys.rewrap audit row per tenant; the old KEK opens nothing after', async () => {
    const tenant = await createTenant(t.store.db, 'rewrap');
    const oldKek = new FileKek(randomBytes(32));
    const newKek = new FileKek(randomBytes(32));
    const keys = new WrappedKeys(t.store.db, oldKek);
    // only this test's keys: a store of its own KEK (other tests' rows are under other KEKs)
    const ed = generateSigningKey().privateKey;
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    await keys.put({ tenantId: tenant, name: 'tuf/snapshot' }, ed);
    await keys.put({ tenantId: tenant, name: 'device-ca/device-ca-00000000000000aa.key' }, ec);
    const mine = async () => (await allWrappedKeys(t.store.db)).filter((r) => r.tenant_id === tenant);
    const before = await mine();

    // a KEK that wraps other rows too is refused as a whole: nothing changes
    await expect(rewrapAllKeys(t.store.db, oldKek, newKek)).rejects.toThrow(/neither the current KEK/);
    expect(await mine()).toEqual(before);

    await t.store.db.deleteFrom('wrapped_keys').where('kek_id', '!=', oldKek.id).execute();
    expect(await rewrapAllKeys(t.store.db, oldKek, newKek)).toEqual({ rewrapped: 2, already: 0 });
    for (const row of await mine()) expect(row.kek_id).toBe(newKek.id);
    await expect(keys.load({ tenantId: tenant, name: 'tuf/snapshot' })).rejects.toThrow(KekError);
    for (const row of await mine()) await expect(oldKek.unwrap(Buffer.from(row.wrapped), Buffer.from(row.key_id))).rejects.toThrow(KekError);
    const reopened = new WrappedKeys(t.store.db, newKek);
    expect(pkcs8((await reopened.load({ tenantId: tenant, name: 'tuf/snapshot' }))!.privateKey)).toEqual(pkcs8(ed));
    expect(pkcs8((await reopened.load({ tenantId: tenant, name: 'device-ca/device-ca-00000000000000aa.key' }))!.privateKey)).toEqual(pkcs8(ec));
    const audit = await t.store.db.selectFrom('audit_events').select(['action', 'actor', 'detail']).where('tenant_id', '=', tenant).execute();
    expect(audit).toEqual([
      { action: 'keys.rewrap', actor: 'system:rewrap-keys', detail: { keys: 2, from_kek: oldKek.id, to_kek: newKek.id, wrap_alg: 'A256GCM' } },
    ]);
    // run again (e.g. after a crash between runs): nothing left to move
    expect(await rewrapAllKeys(t.store.db, oldKek, newKek)).toEqual({ rewrapped: 0, already: 2 });
  });
});

/** Every private key the service holds, in the forms a file could carry it: PKCS#8 DER, PEM body, raw scalar/seed. */
async function keyForms(keys: WrappedKeys, db: TestStore['store']['db'], kek: Kek): Promise<{ name: string; bytes: Buffer }[]> {
  const out: { name: string; bytes: Buffer }[] = [];
  for (const row of await allWrappedKeys(db)) {
    if (row.kek_id !== kek.id) continue;
    const k = (await keys.open(row)).privateKey;
    const der = pkcs8(k);
    const jwk = k.export({ format: 'jwk' });
    out.push({ name: `${row.key_id} pkcs8`, bytes: der }, { name: `${row.key_id} pem body`, bytes: Buffer.from(der.toString('base64').slice(0, 64)) });
    if (typeof jwk.d === 'string') out.push({ name: `${row.key_id} raw`, bytes: Buffer.from(jwk.d, 'base64url') });
  }
  return out;
}

async function* filesUnder(dir: string): AsyncGenerator<string> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* filesUnder(p);
    else if (e.isFile()) yield p;
  }
}

describe.each(availableDrivers())('no key material under the data directory on %s', (driver) => {
  let f: ChannelFixture;
  beforeAll(async () => {
    f = await startChannelFixture(driver);
  });
  afterAll(async () => {
    await f.dispose();
    await rm(`${f.dataDir}.kek`, { force: true });
  });

  it('after start, signing and a device enrollment, no file holds a private key (PEM, PKCS#8, raw) and every key is wrapped', async () => {
    // signing: a publish signs targets, snapshot and timestamp
    await f.repo.publishTargetStream(f.tenantId, { path: 'fw/app.bin' }, Readable.from([Buffer.from('firmware')]));
    // enrollment: the tenant's device CA is created and issues
    const key = await newDeviceKey();
    const anon = clientsFor(f.addr, channelCredentials(f.serverCaPem));
    let enrolled: EnrollResponse;
    try {
      const token = await f.newToken();
      const csrDer = await csrFor(key, 'scan-1');
      enrolled = await unary<EnrollResponse>((cb) =>
        anon.enrollment.enroll(
          { token, deviceName: 'scan-1', csrDer, inventory: { agentVersion: '1', profile: 'linux-arm64', product: 'edge', slots: [], attributes: undefined } },
          cb,
        ),
      );
    } finally {
      anon.close();
    }
    expect(enrolled.certificateDer.length).toBeGreaterThan(0);

    const kek = await f.repo.wrappedKeys.kek();
    const forms = await keyForms(f.repo.wrappedKeys, f.t.store.db, kek);
    const names = forms.map((x) => x.name.split(' ')[0]!);
    // TUF root + online keys, the device CA key and the server CA key are all stored wrapped
    for (const n of ['tuf/root', 'tuf/targets', 'tuf/snapshot', 'tuf/timestamp']) expect(names).toContain(`${f.tenantId}/${n}`);
    expect(names.some((n) => n.startsWith(`${f.tenantId}/device-ca/`))).toBe(true);
    expect(names).toContain('server/server-ca');

    let scanned = 0;
    for await (const file of filesUnder(f.dataDir)) {
      const bytes = await readFile(file);
      scanned += 1;
      expect(bytes.includes('PRIVATE KEY'), `${file} holds a PEM private key`).toBe(false);
      for (const form of forms) expect(bytes.includes(form.bytes), `${file} holds ${form.name}`).toBe(false);
    }
    // the blob store wrote the payload there: the scan saw the data directory in use
    expect(scanned).toBeGreaterThan(0);
  });
});

/** Runs `node dist/main.js [...args]` to its exit. */
function runMain(args: string[], env: Record<string, string>): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [MAIN_JS, ...args], {
    env: { PATH: process.env.PATH ?? '', SVC_HTTP_ADDR: '127.0.0.1:0', SVC_DEVICE_ADDR: '127.0.0.1:0', SVC_LOG_LEVEL: 'warn', ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe.skipIf(!mainBuilt('key-custody'))('node dist/main.js rewrap-keys', () => {
  let dir: string;
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    for (const f of ['.kek', '.kek-2']) await rm(`${dir}${f}`, { force: true });
  });

  it('moves every key to the new KEK; afterwards the old KEK opens nothing and the new one everything', async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-rewrap-'));
    // a first start creates the tenant's repository keys under the generated default KEK beside the data dir
    const first = await startMain({ SVC_DATA_DIR: dir, SVC_ADMIN_EMAIL: 'admin@rewrap.test', SVC_ADMIN_PASSWORD: 'rewrap-password-1' });
    expect(await stopMain(first.child)).toBe(0);
    expect(existsSync(`${dir}.kek`)).toBe(true);
    const checked = runMain(['check'], { SVC_DATA_DIR: dir });
    expect(checked.stderr).toBe('');
    expect(checked.code).toBe(0);
    expect(runMain(['rewrap-keys'], { SVC_DATA_DIR: dir }).stderr).toMatch(/^svc-server: rewrap-keys: give the new KEK with --new-kek-file/);
    expect(runMain(['rewrap-keys', '--new-kek-file', join(dir, 'kek')], { SVC_DATA_DIR: dir }).stderr).toMatch(/lies inside the data directory/);

    await writeFile(`${dir}.kek-2`, randomBytes(32), { mode: 0o600 });
    const r = runMain(['rewrap-keys', '--new-kek-file', `${dir}.kek-2`], { SVC_DATA_DIR: dir });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^rewrap-keys: [1-9]\d* keys rewrapped from file:[0-9a-f]{32} to file:[0-9a-f]{32}\n$/);

    const old = runMain(['check'], { SVC_DATA_DIR: dir, SVC_KEK_FILE: `${dir}.kek` });
    expect(old.code).toBe(2);
    expect(old.stderr).toMatch(/^svc-server: key check failed: TUF root key of tenant [0-9a-f-]{36} is unreadable \(wrapped key .*wrapped by KEK file:/);
    const next = runMain(['check'], { SVC_DATA_DIR: dir, SVC_KEK_FILE: `${dir}.kek-2` });
    expect(next.stderr).toBe('');
    expect(next.code).toBe(0);
    expect(next.stdout).toMatch(/^ok {6}TUF targets key of tenant/m);
  }, 300_000);
});
