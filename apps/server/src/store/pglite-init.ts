/**
 * Creates an embedded database cluster in the directory named by the first argument and
 * exits: run as a child process by `startPglite` so that initdb's memory ends with it.
 */
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';

const dir = process.argv[2];
if (dir === undefined || dir === '') {
  process.stderr.write('usage: pglite-init <directory>\n');
  process.exit(2);
}
const instance = new PGlite({ dataDir: dir, extensions: { pg_trgm } });
await instance.waitReady;
await instance.close();
