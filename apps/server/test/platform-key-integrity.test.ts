/**
 * The real server process (`node dist/main.js`) on a data dir whose key files were deleted
 * while the database stayed intact: the start and `node dist/main.js check` fail with exit
 * status 2 and one line naming the key and its tenant; with every key in place the check
 * passes. A key file of other bytes: platform-key-integrity-replaced.test.ts; recovery and a key
 * lost while the server runs: platform-key-integrity-recovery.test.ts. Needs the build.
 */
import { spawn } from 'node:child_process';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { forRuns, KEY_ADMIN, keyIntegrityFixture, runMain } from './helpers/key-integrity.js';
import { mainBuilt } from './helpers/main-process.js';

const built = mainBuilt('platform-key-integrity');

describe.skipIf(!built)('key integrity of node dist/main.js: deleted keys', () => {
  const k = keyIntegrityFixture();

  it(
    'every key in place: `check` exits 0 and lists what it checked',
    async () => {
      await k.restore();
      const r = await runMain(['check'], { SVC_DATA_DIR: k.dir });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      for (const label of ['TUF root key', 'TUF targets key', 'TUF snapshot key', 'TUF timestamp key', 'device CA key', 'server CA key', 'evidence key 1']) {
        expect(r.stdout).toContain(label);
      }
      // the same check through the package's binary, as an operator runs it (pnpm exec svc-server check)
      const bin = await new Promise<number | null>((resolve) => {
        const child = spawn(join(import.meta.dirname, '..', '..', '..', 'node_modules', '.bin', 'svc-server'), ['check'], {
          env: { PATH: process.env.PATH ?? '', SVC_DATA_DIR: k.dir, SVC_LOG_LEVEL: 'warn' },
          stdio: 'ignore',
        });
        child.on('exit', resolve);
      });
      expect(bin).toBe(0);
    },
    forRuns(2),
  );

  it(
    'a deleted key file fails the start and `check` with exit 2 and one line naming it',
    async () => {
      for (const key of k.keyFiles) {
        await k.restore();
        await unlink(join(k.dir, key.path));
        if (!key.required) {
          // the root key exported into offline custody: nothing is wrong
          expect((await runMain(['check'], { SVC_DATA_DIR: k.dir })).code, key.label).toBe(0);
          continue;
        }
        k.expectRefused(await runMain([], { SVC_DATA_DIR: k.dir, ...KEY_ADMIN }), key, 'is missing');
        k.expectRefused(await runMain(['check'], { SVC_DATA_DIR: k.dir }), key, 'is missing');
      }
    },
    forRuns(13),
  );
});
