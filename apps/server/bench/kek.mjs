// The key-encryption key of the server processes a benchmark starts on PostgreSQL: a server on
// PostgreSQL refuses to start without one (docs/server.md "Key encryption"). One 32-byte key
// file per benchmark process, outside every data directory, shared by all the processes it
// starts (several processes on one schema must open the same wrapped keys); removed at exit.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let file;

/** `{ SVC_KEK_FILE }` for a server started with SVC_DATABASE_URL. */
export function benchKekEnv() {
  if (file === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-kek-'));
    file = join(dir, 'kek');
    writeFileSync(file, randomBytes(32), { mode: 0o600 });
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return { SVC_KEK_FILE: file };
}
