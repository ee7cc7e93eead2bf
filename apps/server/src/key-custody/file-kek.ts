import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readFile, realpath } from 'node:fs/promises';
import { dirname, relative, isAbsolute, resolve } from 'node:path';
import { GCM_IV_BYTES, GCM_TAG_BYTES, KekError, type Kek } from './kek.js';

/** A KEK file holds exactly this many random bytes (AES-256). */
export const KEK_FILE_BYTES = 32;

/**
 * AES-256-GCM with a key read from a file outside the data directory (SVC_KEK_FILE). Its id
 * is an HMAC fingerprint of the key, so rows name the KEK without revealing anything of it.
 */
export class FileKek implements Kek {
  readonly algorithm = 'A256GCM' as const;
  readonly id: string;
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== KEK_FILE_BYTES) throw new KekError(`a KEK file must hold exactly ${KEK_FILE_BYTES} bytes, got ${key.length}`);
    this.#key = Buffer.from(key);
    this.id = `file:${createHmac('sha256', this.#key).update('svc-kek-id').digest('hex').slice(0, 32)}`;
  }

  wrap(plain: Buffer, aad: Buffer): Promise<Buffer> {
    const iv = randomBytes(GCM_IV_BYTES);
    const c = createCipheriv('aes-256-gcm', this.#key, iv, { authTagLength: GCM_TAG_BYTES });
    c.setAAD(aad);
    return Promise.resolve(Buffer.concat([iv, c.update(plain), c.final(), c.getAuthTag()]));
  }

  unwrap(wrapped: Buffer, aad: Buffer): Promise<Buffer> {
    if (wrapped.length < GCM_IV_BYTES + GCM_TAG_BYTES) return Promise.reject(new KekError('wrapped key is too short'));
    try {
      const d = createDecipheriv('aes-256-gcm', this.#key, wrapped.subarray(0, GCM_IV_BYTES), { authTagLength: GCM_TAG_BYTES });
      d.setAAD(aad);
      d.setAuthTag(wrapped.subarray(wrapped.length - GCM_TAG_BYTES));
      return Promise.resolve(Buffer.concat([d.update(wrapped.subarray(GCM_IV_BYTES, wrapped.length - GCM_TAG_BYTES)), d.final()]));
    } catch (e) {
      return Promise.reject(new KekError(`the KEK ${this.id} does not open this key (wrong KEK or altered bytes)`, { cause: e }));
    }
  }

  close(): Promise<void> {
    this.#key.fill(0);
    return Promise.resolve();
  }
}

/** True when `path` is `dir` or inside it (after resolving symbolic links of what exists). */
export async function isInside(path: string, dir: string): Promise<boolean> {
  const real = async (p: string) => {
    const abs = resolve(p);
    try {
      return await realpath(abs);
    } catch {
      // not there yet: resolve its directory instead
      try {
        return resolve(await realpath(dirname(abs)), abs.slice(dirname(abs).length + 1));
      } catch {
        return abs;
      }
    }
  };
  const rel = relative(await real(dir), await real(path));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * Opens the KEK file at `path`; refused when it lies inside `dataDir` (a copy of the data
 * directory must not carry its own key) or is not exactly 32 bytes. With `create`, a missing
 * file is made (32 random bytes, 0600, exclusive: two processes starting together keep one).
 */
export async function openFileKek(path: string, dataDir: string, opts: { create?: boolean } = {}): Promise<FileKek> {
  if (await isInside(path, dataDir)) throw new KekError(`SVC_KEK_FILE: ${path} lies inside the data directory ${dataDir}; keep the KEK outside it`);
  if (opts.create) {
    await mkdir(dirname(resolve(path)), { recursive: true, mode: 0o700 });
    try {
      const fh = await open(path, 'wx', 0o600);
      try {
        await fh.writeFile(randomBytes(KEK_FILE_BYTES));
        await fh.sync();
      } finally {
        await fh.close();
      }
      await chmod(path, 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
  let key: Buffer;
  try {
    key = await readFile(path);
  } catch (e) {
    throw new KekError(`SVC_KEK_FILE: cannot read ${path}: ${(e as Error).message}`, { cause: e });
  }
  if (key.length !== KEK_FILE_BYTES) throw new KekError(`SVC_KEK_FILE: ${path} must hold exactly ${KEK_FILE_BYTES} random bytes, it holds ${key.length}`);
  try {
    return new FileKek(key);
  } finally {
    key.fill(0);
  }
}
