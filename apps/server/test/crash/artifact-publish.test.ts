/**
 * spec §1 rule 2 under a real crash: the artifact publish flow is killed with SIGKILL in a child
 * process after the TUF metadata naming the artifact is committed and before the record insert.
 * Afterwards: a signed target, no artifact record; the retry publishes and records it.
 * (The in-process variant with a throwing hook is in resources/releases/release-flow.test.ts.)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordPublishedArtifact } from '../../src/resources/artifacts/commands.js';
import { checkArtifactFields } from '../../src/resources/artifacts/fields.js';
import { publishArtifactTarget, storeArtifactBytes } from '../../src/resources/artifacts/publication.js';
import type { PublishingDeps } from '../../src/resources/publishing.js';
import { runUnitOfWork, systemActor } from '../../src/resources/unit-of-work.js';
import { SigningRepository } from '../../src/signing-repo/index.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { openStore, type OpenStoreOptions, type Store } from '../../src/store/open.js';
import { availableDrivers, createTestStore, seedPgliteCluster } from '../helpers/store.js';
import { runChildUntilKilled, STORE_FILES, transpileForChild as transpile } from '../helpers/kill-child.js';

function transpileForChild(): Promise<string> {
  return transpile('svc-pipeline-crash', {
    files: [
      ...STORE_FILES,
      'src/config.ts',
      'src/limits.ts',
      'src/errors/server-error.ts',
      'src/resources/artifacts/publication.ts',
      'src/resources/artifacts/fields.ts',
      'src/resources/artifacts/queries.ts',
      'src/http/pagination.ts',
      'src/resources/publishing.ts',
      'src/store/tx.ts',
    ],
    // the repository opens its keys through key custody (wrapped keys, the default KEK file)
    dirs: ['src/signing-repo', 'src/blobs', 'src/key-custody'],
    childSource: `import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { openStore } from './src/store/open.js';
import { SigningRepository } from './src/signing-repo/repository.js';
import { checkArtifactFields } from './src/resources/artifacts/fields.js';
import { publishArtifactTarget, storeArtifactBytes } from './src/resources/artifacts/publication.js';
const cfg = JSON.parse(await readFile(process.argv[2], 'utf8'));
const store = await openStore(cfg.open);
const repo = new SigningRepository({ db: store.db, dataDir: cfg.dataDir });
const deps = {
  db: store.db, blobs: repo.blobs, clock: () => new Date(),
  publishTargets: (t, e, o) => repo.publishTargets(t, e, o),
  // park at the kill point and tell the parent, which SIGKILLs us
  hooks: { afterTargetsCommitted: async () => { process.stdout.write('AT afterTargetsCommitted\\n'); await new Promise(() => setInterval(() => {}, 1000)); } },
};
const blob = await storeArtifactBytes(deps, createReadStream(cfg.payloadFile));
await publishArtifactTarget(deps, cfg.tenantId, checkArtifactFields(cfg.fields), blob);
process.stdout.write('DONE\\n');
`,
  });
}

describe.each(availableDrivers())('artifact publish killed between metadata commit and record insert on %s', (driver) => {
  let childDir: string;
  let dataDir: string;
  let open: OpenStoreOptions;
  let store: Store | undefined;
  let dispose: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    childDir = await transpileForChild();
    dataDir = await mkdtemp(join(tmpdir(), 'svc-pipeline-crash-'));
    if (driver === 'postgres') {
      const t = await createTestStore('postgres');
      store = t.store;
      open = t.openOptions;
      dispose = t.dispose;
    } else {
      // PGlite is single-process: the parent closes it before the child opens the same directory
      await seedPgliteCluster(dataDir);
      open = { pgliteDir: join(dataDir, 'db') };
      const s = await openStore(open);
      await migrateToLatest(s);
      await s.close();
    }
  });
  afterAll(async () => {
    await dispose();
    await rm(childDir, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  });

  it('leaves a signed target and no record; the retry records it', async () => {
    const s1 = driver === 'pglite' ? await openStore(open) : store!;
    const tenantId = randomUUID();
    await s1.db.insertInto('tenants').values({ id: tenantId, name: 'crash', is_default: false }).execute();
    await new SigningRepository({ db: s1.db, dataDir }).ensureTenantRepo(tenantId);
    const payload = randomBytes(256 * 1024);
    const payloadFile = join(dataDir, 'payload.bin');
    await writeFile(payloadFile, payload);
    if (driver === 'pglite') await s1.close();

    const fields = { name: 'crash', version: '1.0.0', kind: 'model', filename: 'crash.bin' };
    const run = await runChildUntilKilled(childDir, { open, dataDir, tenantId, payloadFile, fields });
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('AT afterTargetsCommitted\n');
    expect(run.signal).toBe('SIGKILL');

    const s2 = driver === 'pglite' ? await openStore(open) : store!;
    try {
      const repo = new SigningRepository({ db: s2.db, dataDir });
      const target = 'artifacts/crash/1.0.0/crash.bin';
      expect((await repo.getTargetInfo(tenantId, target))?.length).toBe(payload.length);
      expect(await s2.db.selectFrom('artifacts').select('id').where('tenant_id', '=', tenantId).execute()).toEqual([]);

      const deps: PublishingDeps = { db: s2.db, blobs: repo.blobs, clock: () => new Date(), publishTargets: (t, e, o) => repo.publishTargets(t, e, o) };
      const blob = await storeArtifactBytes(deps, Readable.from([payload]));
      const published = await publishArtifactTarget(deps, tenantId, checkArtifactFields(fields), blob);
      const a = await runUnitOfWork(s2.db, { tenant: tenantId, actor: systemActor('retry'), now: new Date() }, (uow) =>
        recordPublishedArtifact(uow, published),
      );
      expect(a).toMatchObject({ name: 'crash', version: '1.0.0', target, length: payload.length });
      expect(await s2.db.selectFrom('artifacts').select('id').where('tenant_id', '=', tenantId).execute()).toHaveLength(1);
    } finally {
      if (driver === 'pglite') await s2.close();
    }
  }, 120_000); // three PGlite opens of one data dir (child included): slow on 2 busy cores
});
