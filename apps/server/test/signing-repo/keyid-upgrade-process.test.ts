/**
 * The real server process (`node dist/main.js`) started on a data dir whose TUF repository
 * names keys by `sha256:` + SPKI ids: it rotates root to TUF key ids at start, and TUF clients
 * (tuf-js 5 and 4) provisioned with the old root version 1 follow the chain over
 * /api/v1/tuf and download a target. Needs the build (`pnpm test` builds first).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDefaultTenant } from '../../src/resources/tenants/queries.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { openStore } from '../../src/store/open.js';
import { specKeyId, writeLegacyRepo } from '../helpers/legacy-tuf-repo.js';
import { mainBuilt, startMain, stopMain } from '../helpers/main-process.js';
import { seedPgliteCluster } from '../helpers/store.js';
import { TUF_CLIENTS } from '../helpers/tuf-clients.js';

const built = mainBuilt('platform-tuf-keyid-upgrade');
const admin = { SVC_ADMIN_EMAIL: 'root@example.test', SVC_ADMIN_PASSWORD: 'password123' };

describe.skipIf(!built)('node dist/main.js on a data dir whose TUF metadata names keys by sha256: ids', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-main-tuf-'));
    await seedPgliteCluster(dir);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('rotates root at start; clients pinned to root 1 follow the chain and download; a restart rotates nothing more', async () => {
    const fw = Buffer.from('firmware from before the upgrade\n');
    const store = await openStore({ pgliteDir: join(dir, 'db') });
    let tenant: string;
    let root1: Buffer;
    let pems: Record<string, string>;
    try {
      await migrateToLatest(store);
      tenant = await ensureDefaultTenant(store.db);
      ({ pems } = await writeLegacyRepo(store.db, dir, tenant, { targets: [{ path: 'artifacts/fw/1.0/fw.bin', bytes: fw }] }));
      const row = await store.db
        .selectFrom('tuf_metadata')
        .select('bytes')
        .where('tenant_id', '=', tenant)
        .where('role', '=', 'root')
        .executeTakeFirstOrThrow();
      root1 = Buffer.from(row.bytes);
    } finally {
      await store.close();
    }
    const expectedIds = Object.values(pems).map(specKeyId).sort();

    const first = await startMain({ SVC_DATA_DIR: dir, SVC_LOG_LEVEL: 'info', ...admin });
    try {
      expect(first.output()).toMatch(/TUF root rotated to TUF key ids/);
      const login = await fetch(`${first.url}/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: admin.SVC_ADMIN_EMAIL, password: admin.SVC_ADMIN_PASSWORD }),
      });
      expect(login.status).toBe(204);
      const headers = { cookie: login.headers.get('set-cookie')!.split(';')[0]! };
      for (const client of TUF_CLIENTS) {
        const metadataDir = await mkdtemp(join(dir, 'md-'));
        const targetDir = await mkdtemp(join(dir, 'tg-'));
        await writeFile(join(metadataDir, 'root.json'), root1);
        const c = client.open(
          { metadataDir, targetDir, metadataBaseUrl: `${first.url}/tuf/${tenant}/metadata`, targetBaseUrl: `${first.url}/tuf/${tenant}/targets` },
          headers,
        );
        expect((await c.fetchTarget('artifacts/fw/1.0/fw.bin'))?.equals(fw), client.name).toBe(true);
        const trusted = JSON.parse(await readFile(join(metadataDir, 'root.json'), 'utf8')) as { signed: { version: number; keys: Record<string, unknown> } };
        expect([trusted.signed.version, Object.keys(trusted.signed.keys).sort()], client.name).toEqual([2, expectedIds]);
      }
    } finally {
      expect(await stopMain(first.child)).toBe(0);
    }

    const second = await startMain({ SVC_DATA_DIR: dir, SVC_LOG_LEVEL: 'info' });
    try {
      expect(second.output()).not.toMatch(/TUF root rotated|still names keys/);
    } finally {
      expect(await stopMain(second.child)).toBe(0);
    }
    const after = await openStore({ pgliteDir: join(dir, 'db') });
    try {
      const roots = await after.db
        .selectFrom('tuf_metadata')
        .select('version')
        .where('tenant_id', '=', tenant)
        .where('role', '=', 'root')
        .orderBy('version')
        .execute();
      expect(roots.map((r) => r.version)).toEqual([1, 2]);
    } finally {
      await after.close();
    }
    // a backstop for two server starts, three embedded database opens and every TUF client on a busy machine
  }, 300_000);
});
