// The key-encryption key of a bench's server process on PostgreSQL: a server on
// SVC_DATABASE_URL refuses to start without SVC_KEK_FILE or a PKCS#11 module (docs/server.md
// "Key encryption"). One 32-byte file per schema, outside every data directory, kept for the
// bench's process (every server it starts on that schema opens the same keys) and removed when
// it exits. The embedded database needs none: the server makes `<SVC_DATA_DIR>.kek` itself.
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made = new Set();
process.on('exit', () => {
  for (const path of made) rmSync(path, { force: true });
});

/** `{SVC_KEK_FILE}` for a server process on PostgreSQL schema `schema`. */
export function benchKekEnv(schema) {
  const path = join(tmpdir(), `svc-bench-kek-${process.pid}-${schema}`);
  if (!made.has(path)) {
    writeFileSync(path, randomBytes(32), { mode: 0o600, flag: 'w' });
    made.add(path);
  }
  return { SVC_KEK_FILE: path };
}
