/**
 * Key recovery of the real server process (`node dist/main.js`): SVC_KEY_RECOVERY=
 * tuf-online-rotate replaces lost TUF online keys through a root update signed by the root key,
 * SVC_KEY_RECOVERY=evidence-rotate,device-ca-rotate retires a lost evidence key and a lost
 * device CA key through their audited rotations (the device side of the CA rotation is
 * device-channel-ca-rotation.test.ts); and a TUF key that disappears while the server runs makes
 * a publish answer 503 KEY_UNAVAILABLE naming it. The fixture and the refused starts:
 * platform-key-integrity.test.ts. Needs the build.
 */
import { cp, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateSigningKey } from '../src/signing-repo/keys.js';
import { openStore } from '../src/store/open.js';
import { forRuns, KEY_ADMIN, keyIntegrityFixture, runMain } from './helpers/key-integrity.js';
import { mainBuilt, startMain, stopMain } from './helpers/main-process.js';
import { artifactMultipart } from './pipeline-fixture.js';

const built = mainBuilt('platform-key-integrity-recovery');
const admin = KEY_ADMIN;

describe.skipIf(!built)('key integrity of node dist/main.js: recovery', () => {
  const k = keyIntegrityFixture();

  it(
    'a TUF targets key deleted while the server runs: publishing answers 503 KEY_UNAVAILABLE naming it',
    async () => {
      await k.restore();
      const m = await startMain({ SVC_DATA_DIR: k.dir, ...admin });
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
        await unlink(join(k.dir, 'keys', k.tenant, 'targets.pem'));
        const res = await publish('1.0.1');
        expect(res.status).toBe(503);
        const body = (await res.json()) as { error: string };
        expect(body.error).toMatch(new RegExp(`^KEY_UNAVAILABLE: TUF targets key of tenant ${k.tenant} is missing`));
        // a key that comes back makes the same request succeed
        await cp(join(k.pristine, 'keys', k.tenant, 'targets.pem'), join(k.dir, 'keys', k.tenant, 'targets.pem'));
        expect((await publish('1.0.1')).status).toBe(201);
      } finally {
        expect(await stopMain(m.child)).toBe(0);
      }
    },
    forRuns(2),
  );

  it(
    'SVC_KEY_RECOVERY=evidence-rotate,device-ca-rotate retires a lost evidence key and a lost device CA key through their audited rotations; the next start needs no recovery',
    async () => {
      const { dir, tenant } = k;
      await k.restore();
      await unlink(join(dir, 'keys', tenant, 'evidence.pem'));
      await unlink(join(dir, 'ca', tenant, k.deviceCaKeyFile));
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
        expect(keys.map((r) => [r.seq, r.valid_until === null])).toEqual([
          [1, false],
          [2, true],
        ]);
        const cas = await store.db
          .selectFrom('device_cas')
          .select(['seq', 'retired_at', 'retired_by'])
          .where('tenant_id', '=', tenant)
          .orderBy('seq')
          .execute();
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
      await cp(join(dir, 'keys', tenant, 'evidence.pem'), join(k.pristine, 'keys', tenant, 'evidence.pem'));
      await cp(join(dir, 'ca'), join(k.pristine, 'ca'), { recursive: true });
    },
    forRuns(4),
  );

  // last: the recovery changes the database, which restore() does not put back
  it(
    'SVC_KEY_RECOVERY=tuf-online-rotate replaces lost TUF online keys through a root update; the next start needs no recovery',
    async () => {
      const { dir, tenant } = k;
      await k.restore();
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
    },
    forRuns(5),
  );
});
