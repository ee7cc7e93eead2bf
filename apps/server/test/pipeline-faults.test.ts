/**
 * spec 1.2 under a real crash: the artifact publish flow is killed with SIGKILL in a child
 * process after the TUF metadata naming the artifact is committed and before the record insert.
 * Afterwards: a signed target, no artifact record; the retry publishes and records it.
 * (The in-process variant with a throwing hook is in pipeline-api.test.ts.)
 */
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkArtifactFields, publishArtifact, storeArtifactBytes } from '../src/pipeline/artifacts.js';
import type { PipelineDeps } from '../src/pipeline/deps.js';
import { SigningRepository } from '../src/signing-repo/index.js';
import { migrateToLatest } from '../src/store/migrate.js';
import { openStore, type OpenStoreOptions, type Store } from '../src/store/open.js';
import { availableDrivers, createTestStore } from './helpers/store.js';

const serverDir = join(import.meta.dirname, '..');

/** Node 20 cannot run TypeScript: transpile (no type check; tsc -b does that) the modules the child needs. */
async function transpileForChild(): Promise<string> {
  const out = join(serverDir, 'node_modules', '.cache', `svc-pipeline-crash-${randomUUID()}`);
  const files = ['src/store/open.ts', 'src/errors/server-error.ts', 'src/pipeline/artifacts.ts', 'src/pipeline/db.ts', 'src/pipeline/deps.ts', 'src/pipeline/errors.ts'];
  for (const root of ['src/signing-repo', 'src/blobs']) for (const name of await readdir(join(serverDir, root))) if (name.endsWith('.ts')) files.push(`${root}/${name}`);
  for (const file of files) {
    const { outputText } = ts.transpileModule(await readFile(join(serverDir, file), 'utf8'), { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
    const dest = join(out, file.replace(/\.ts$/, '.js'));
    await mkdir(dirname(dest), { recursive: true });
    await writeFile(dest, outputText);
  }
  await writeFile(
    join(out, 'child.mjs'),
    `import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { openStore } from './src/store/open.js';
import { SigningRepository } from './src/signing-repo/repository.js';
import { checkArtifactFields, publishArtifact, storeArtifactBytes } from './src/pipeline/artifacts.js';
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
await publishArtifact(deps, cfg.tenantId, checkArtifactFields(cfg.fields), blob);
process.stdout.write('DONE\\n');
`,
  );
  return out;
}

function runUntilKilled(childDir: string, cfgFile: string): Promise<{ signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(childDir, 'child.mjs'), cfgFile], { cwd: serverDir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`child never reached the kill point; stdout=${stdout} stderr=${stderr}`));
    }, 60_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (stdout.includes('AT ')) child.kill('SIGKILL');
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (_c, signal) => {
      clearTimeout(timer);
      resolve({ signal, stdout, stderr });
    });
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
    const cfgFile = join(dataDir, 'cfg.json');
    await writeFile(cfgFile, JSON.stringify({ open, dataDir, tenantId, payloadFile, fields }));
    const run = await runUntilKilled(childDir, cfgFile);
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('AT afterTargetsCommitted\n');
    expect(run.signal).toBe('SIGKILL');

    const s2 = driver === 'pglite' ? await openStore(open) : store!;
    try {
      const repo = new SigningRepository({ db: s2.db, dataDir });
      const target = 'artifacts/crash/1.0.0/crash.bin';
      expect((await repo.getTargetInfo(tenantId, target))?.length).toBe(payload.length);
      expect(await s2.db.selectFrom('artifacts').select('id').where('tenant_id', '=', tenantId).execute()).toEqual([]);

      const deps: PipelineDeps = { db: s2.db, blobs: repo.blobs, clock: () => new Date(), publishTargets: (t, e, o) => repo.publishTargets(t, e, o) };
      const blob = await storeArtifactBytes(deps, Readable.from([payload]));
      const a = await publishArtifact(deps, tenantId, checkArtifactFields(fields), blob);
      expect(a).toMatchObject({ name: 'crash', version: '1.0.0', target, length: payload.length });
      expect(await s2.db.selectFrom('artifacts').select('id').where('tenant_id', '=', tenantId).execute()).toHaveLength(1);
    } finally {
      if (driver === 'pglite') await s2.close();
    }
  });
});
