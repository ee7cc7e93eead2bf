/**
 * The real server process (`node dist/main.js`) on a data dir whose key files were overwritten
 * while the database stayed intact, by garbage or by another valid key of the same kind: the
 * start fails with exit status 2 and one line naming the key and its tenant. The fixture and
 * the deleted-key cases: platform-key-integrity.test.ts. Needs the build.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { forRuns, KEY_ADMIN, keyIntegrityFixture, runMain } from './helpers/key-integrity.js';
import { mainBuilt } from './helpers/main-process.js';

const built = mainBuilt('platform-key-integrity-replaced');

describe.skipIf(!built)('key integrity of node dist/main.js: replaced keys', () => {
  const k = keyIntegrityFixture();

  it(
    'a key file of garbage bytes fails the start with exit 2 and one line naming it',
    async () => {
      for (const key of k.keyFiles) {
        await k.restore();
        await writeFile(join(k.dir, key.path), Buffer.from([0x00, 0xff, 0x13, 0x37, 0x0a, 0x42]));
        k.expectRefused(await runMain([], { SVC_DATA_DIR: k.dir, ...KEY_ADMIN }), key, 'is unreadable');
      }
    },
    forRuns(7),
  );

  it(
    'another valid key in place of the recorded one fails the start with exit 2 and one line naming it',
    async () => {
      for (const key of k.keyFiles) {
        await k.restore();
        await writeFile(join(k.dir, key.path), await key.otherKey());
        k.expectRefused(await runMain([], { SVC_DATA_DIR: k.dir, ...KEY_ADMIN }), key, 'does not match');
      }
    },
    forRuns(7),
  );
});
