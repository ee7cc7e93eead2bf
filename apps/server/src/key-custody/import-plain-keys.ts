import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readdir, readFile, rm, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { isUuid } from '@svc/release-core';
import { keyIdOfRef, type KeyRef, type WrappedKeys } from './wrapped-keys.js';

/** What one start's import of plain key files did. */
export interface PlainKeyImport {
  /** `<file> -> wrapped key <id>`, one per file wrapped, verified and removed. */
  imported: string[];
  /** Files left in place because the database already holds another key under their name: one line each. */
  conflicts: string[];
}

interface PlainKeyFile {
  path: string;
  ref: KeyRef;
  /** The server CA's certificate file, stored beside its key. */
  certPath?: string;
}

const TUF_FILE = /^(root|targets|snapshot|timestamp)\.pem$/;
const EVIDENCE_FILE = /^(evidence(?:\.[0-9a-f]{64})?)\.pem$/;
const DEVICE_CA_FILE = /^device-ca-[0-9a-f]{16}\.key$/;

async function entries(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw e;
  }
}

/**
 * The private key files a data directory from before the KEK holds (the layout the server
 * wrote then): `keys/<tenant>/{root,targets,snapshot,timestamp,evidence}.pem` and a pending
 * rotation's `evidence.<hex>.pem`, `ca/<tenant>/device-ca-<hex>.key`, `ca/server/ca.key`
 * with `ca.pem`. Also the temporary files an interrupted creation left (`.<name>.<uuid>.tmp`,
 * `ca/.server-*`): never named by anything, removed.
 */
async function plainKeyFiles(dataDir: string): Promise<{ keys: PlainKeyFile[]; leftovers: string[] }> {
  const keys: PlainKeyFile[] = [];
  const leftovers: string[] = [];
  for (const tenant of await entries(join(dataDir, 'keys'))) {
    if (!isUuid(tenant)) continue;
    for (const f of await entries(join(dataDir, 'keys', tenant))) {
      const path = join(dataDir, 'keys', tenant, f);
      const tuf = TUF_FILE.exec(f);
      const evidence = EVIDENCE_FILE.exec(f);
      if (tuf) keys.push({ path, ref: { tenantId: tenant, name: `tuf/${tuf[1]!}` } });
      else if (evidence) keys.push({ path, ref: { tenantId: tenant, name: `evidence/${evidence[1]!}` } });
      else if (/^\..+\.tmp$/.test(f)) leftovers.push(path);
    }
  }
  for (const entry of await entries(join(dataDir, 'ca'))) {
    if (entry === 'server') {
      keys.push({
        path: join(dataDir, 'ca', 'server', 'ca.key'),
        ref: { tenantId: null, name: 'server-ca' },
        certPath: join(dataDir, 'ca', 'server', 'ca.pem'),
      });
    } else if (entry.startsWith('.server-')) {
      leftovers.push(join(dataDir, 'ca', entry));
    } else if (isUuid(entry)) {
      for (const f of await entries(join(dataDir, 'ca', entry))) {
        if (DEVICE_CA_FILE.test(f)) keys.push({ path: join(dataDir, 'ca', entry, f), ref: { tenantId: entry, name: `device-ca/${f}` } });
      }
    }
  }
  return { keys, leftovers };
}

function sameKey(a: KeyObject, b: KeyObject): boolean {
  return a.export({ format: 'der', type: 'pkcs8' }).equals(b.export({ format: 'der', type: 'pkcs8' }));
}

/**
 * Moves a data directory from before the KEK to wrapped keys, at every start (a no-op once
 * done): each plain key file is wrapped and stored (unless its key is stored already), read
 * back and unwrapped, compared with the file, and only then removed. A file whose name the
 * database already holds with another key is left in place and reported. Safe in several
 * processes at once: the first insert wins and every process compares with what was stored.
 */
export async function importPlainKeyFiles(keys: WrappedKeys, dataDir: string): Promise<PlainKeyImport> {
  const out: PlainKeyImport = { imported: [], conflicts: [] };
  const found = await plainKeyFiles(dataDir);
  for (const file of found.keys) {
    let pem: string;
    try {
      pem = await readFile(file.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw e;
    }
    const id = keyIdOfRef(file.ref);
    let key: KeyObject;
    let certificate: Uint8Array | undefined;
    try {
      key = createPrivateKey({ key: pem, format: 'pem' });
      if (file.certPath !== undefined) certificate = new Uint8Array(new X509Certificate(await readFile(file.certPath)).raw);
    } catch (e) {
      out.conflicts.push(
        `${file.path} is not a readable key${file.certPath ? ' with its certificate' : ''} (${(e as Error).message}); left in place, not stored as ${id}`,
      );
      continue;
    }
    await keys.create(file.ref, key, certificate !== undefined ? { certificate } : {});
    const stored = await keys.load(file.ref);
    if (stored === undefined || !sameKey(stored.privateKey, key)) {
      out.conflicts.push(`${file.path} holds another key than wrapped key ${id}; left in place (the stored key is used)`);
      continue;
    }
    // the server CA's certificate (public) stays: agents are provisioned with it
    await unlink(file.path);
    out.imported.push(`${file.path} -> wrapped key ${id}`);
  }
  for (const path of found.leftovers) await rm(path, { recursive: true, force: true });
  // directories the import emptied go too (rmdir refuses a directory that still holds something)
  for (const parent of ['keys', 'ca']) {
    for (const sub of await entries(join(dataDir, parent))) await rmdir(join(dataDir, parent, sub)).catch(() => undefined);
    await rmdir(join(dataDir, parent)).catch(() => undefined);
  }
  return out;
}
