import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMBEDDED_PG_SETTINGS, startPglite } from '../../src/store/open.js';

/**
 * A data directory without a cluster is initialised by a child process into `<db>.initdb`,
 * renamed into place once complete; the embedded database then runs with the small settings.
 */
describe('embedded database initialisation', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-embedded-init-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('makes the cluster in a child, leaves no pending directory, and runs with the embedded settings', async () => {
    const dir = join(root, 'a', 'db');
    // what an interrupted first start leaves behind is discarded
    await mkdir(`${dir}.initdb`, { recursive: true });
    await writeFile(join(`${dir}.initdb`, 'PG_VERSION'), 'half made');
    const pg = await startPglite(dir);
    try {
      expect(existsSync(join(dir, 'PG_VERSION'))).toBe(true);
      expect(existsSync(`${dir}.initdb`)).toBe(false);
      for (const [name, value] of Object.entries(EMBEDDED_PG_SETTINGS)) {
        const { rows } = await pg.query<Record<string, string>>(`SHOW ${name}`);
        expect(rows[0]![name], name).toBe(value);
      }
      await pg.exec('CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)');
    } finally {
      await pg.close();
    }
    // a second start resumes the cluster: no initdb, the data is there
    const again = await startPglite(dir);
    try {
      expect((await again.query<{ v: number }>('SELECT v FROM kept')).rows).toEqual([{ v: 7 }]);
    } finally {
      await again.close();
    }
  }, 300_000);

  it('an empty directory becomes a cluster; one with other files is refused, untouched', async () => {
    const empty = join(root, 'b', 'db');
    await mkdir(empty, { recursive: true });
    const pg = await startPglite(empty);
    await pg.close();
    expect(existsSync(join(empty, 'PG_VERSION'))).toBe(true);

    const foreign = join(root, 'c', 'db');
    await mkdir(foreign, { recursive: true });
    await writeFile(join(foreign, 'notes.txt'), 'not a database');
    await expect(startPglite(foreign)).rejects.toThrow(`embedded database: ${foreign} exists, is not empty and holds no cluster (no PG_VERSION)`);
    expect(await readdir(foreign)).toEqual(['notes.txt']);
  }, 300_000);
});
