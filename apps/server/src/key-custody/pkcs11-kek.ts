import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { AesGCM, Mechanism, PKCS11, Pkcs11Lib } from './pkcs11js-api.js';
import { GCM_IV_BYTES, GCM_TAG_BYTES, KekError, type Kek } from './kek.js';

export interface Pkcs11KekOptions {
  /** SVC_KEK_PKCS11_MODULE: path of the PKCS#11 library (e.g. /usr/lib/softhsm/libsofthsm2.so). */
  module: string;
  /** SVC_KEK_PKCS11_TOKEN: the token label. */
  token: string;
  /** SVC_KEK_PKCS11_KEY_LABEL: the AES key's CKA_LABEL (default `svc-kek`). */
  keyLabel: string;
  /** SVC_KEK_PKCS11_PIN_FILE: a file holding the user PIN (one line). */
  pinFile: string;
}

export const DEFAULT_PKCS11_KEY_LABEL = 'svc-kek';

/** One loaded, initialized module per path and process (C_Initialize may run once), shared by the KEKs on it. */
const loaded = new Map<string, { p: PKCS11; users: number }>();

/** pkcs11js is an optional dependency (a native build): loaded only when a token is configured. */
function loadPkcs11js(): Pkcs11Lib {
  try {
    return createRequire(import.meta.url)('pkcs11js') as Pkcs11Lib;
  } catch (e) {
    throw new KekError(`SVC_KEK_PKCS11_MODULE is set but the pkcs11js package is not installed or not built (${(e as Error).message})`, { cause: e });
  }
}

/**
 * A KEK inside a PKCS#11 token: an AES-256 secret key (CKA_LABEL `keyLabel`) that encrypts
 * and decrypts with CKM_AES_GCM inside the token, so its bytes never reach this process.
 * Each wrap uses a fresh 96-bit IV made here (stored in front of the ciphertext) and the
 * key's id as additional authenticated data; the layout is the one FileKek writes.
 */
export class Pkcs11Kek implements Kek {
  readonly algorithm = 'PKCS11-CKM_AES_GCM' as const;
  readonly id: string;
  readonly #p: PKCS11;
  readonly #lib: Pkcs11Lib;
  readonly #session: Buffer;
  readonly #key: Buffer;
  #closed = false;

  readonly #module: string;

  private constructor(lib: Pkcs11Lib, p: PKCS11, session: Buffer, key: Buffer, id: string, module: string) {
    this.#module = module;
    this.#lib = lib;
    this.#p = p;
    this.#session = session;
    this.#key = key;
    this.id = id;
  }

  static async open(o: Pkcs11KekOptions): Promise<Pkcs11Kek> {
    let pin: string;
    try {
      pin = (await readFile(o.pinFile, 'utf8')).replace(/\r?\n$/, '');
    } catch (e) {
      throw new KekError(`SVC_KEK_PKCS11_PIN_FILE: cannot read ${o.pinFile}: ${(e as Error).message}`, { cause: e });
    }
    const lib = loadPkcs11js();
    let entry = loaded.get(o.module);
    if (entry === undefined) {
      const fresh = new lib.PKCS11();
      try {
        fresh.load(o.module);
        fresh.C_Initialize();
      } catch (e) {
        throw new KekError(`SVC_KEK_PKCS11_MODULE: cannot load ${o.module}: ${(e as Error).message}`, { cause: e });
      }
      entry = { p: fresh, users: 0 };
      loaded.set(o.module, entry);
    }
    const p = entry.p;
    entry.users += 1;
    try {
      const slot = p.C_GetSlotList(true).find((s) => p.C_GetTokenInfo(s).label.trim() === o.token);
      if (slot === undefined) throw new KekError(`SVC_KEK_PKCS11_TOKEN: no token labelled ${JSON.stringify(o.token)} in ${o.module}`);
      const session = p.C_OpenSession(slot, lib.CKF_SERIAL_SESSION | lib.CKF_RW_SESSION);
      try {
        p.C_Login(session, lib.CKU_USER, pin);
      } catch (e) {
        // the login is the token's, shared by every session of this process: a second KEK on the token finds it done
        if (!String((e as Error).message).includes('CKR_USER_ALREADY_LOGGED_IN'))
          throw new KekError(`SVC_KEK_PKCS11_PIN_FILE: login to token ${JSON.stringify(o.token)} refused (${(e as Error).message})`, { cause: e });
      }
      p.C_FindObjectsInit(session, [
        { type: lib.CKA_CLASS, value: lib.CKO_SECRET_KEY },
        { type: lib.CKA_KEY_TYPE, value: lib.CKK_AES },
        { type: lib.CKA_LABEL, value: o.keyLabel },
      ]);
      const found = p.C_FindObjects(session, 2);
      p.C_FindObjectsFinal(session);
      if (found.length !== 1) {
        throw new KekError(
          `SVC_KEK_PKCS11_KEY_LABEL: token ${JSON.stringify(o.token)} holds ${found.length} AES keys labelled ${JSON.stringify(o.keyLabel)}, expected exactly one`,
        );
      }
      return new Pkcs11Kek(lib, p, session, found[0]!, `pkcs11:${o.token}/${o.keyLabel}`, o.module);
    } catch (e) {
      release(o.module);
      if (e instanceof KekError) throw e;
      throw new KekError(`PKCS#11 token ${JSON.stringify(o.token)}: ${(e as Error).message}`, { cause: e });
    }
  }

  #params(iv: Buffer, aad: Buffer): Mechanism {
    const parameter: AesGCM = { type: this.#lib.CK_PARAMS_AES_GCM, iv, aad, ivBits: GCM_IV_BYTES * 8, tagBits: GCM_TAG_BYTES * 8 };
    return { mechanism: this.#lib.CKM_AES_GCM, parameter };
  }

  wrap(plain: Buffer, aad: Buffer): Promise<Buffer> {
    const iv = randomBytes(GCM_IV_BYTES);
    try {
      this.#p.C_EncryptInit(this.#session, this.#params(iv, aad), this.#key);
      const out = this.#p.C_Encrypt(this.#session, plain, Buffer.alloc(plain.length + GCM_TAG_BYTES + 16));
      return Promise.resolve(Buffer.concat([iv, out]));
    } catch (e) {
      return Promise.reject(new KekError(`the KEK ${this.id} could not wrap a key: ${(e as Error).message}`, { cause: e }));
    }
  }

  unwrap(wrapped: Buffer, aad: Buffer): Promise<Buffer> {
    if (wrapped.length < GCM_IV_BYTES + GCM_TAG_BYTES) return Promise.reject(new KekError('wrapped key is too short'));
    try {
      this.#p.C_DecryptInit(this.#session, this.#params(wrapped.subarray(0, GCM_IV_BYTES), aad), this.#key);
      const body = wrapped.subarray(GCM_IV_BYTES);
      return Promise.resolve(Buffer.from(this.#p.C_Decrypt(this.#session, body, Buffer.alloc(body.length + 16))));
    } catch (e) {
      return Promise.reject(new KekError(`the KEK ${this.id} does not open this key (wrong KEK or altered bytes): ${(e as Error).message}`, { cause: e }));
    }
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    try {
      this.#p.C_CloseSession(this.#session);
    } finally {
      release(this.#module);
    }
    return Promise.resolve();
  }
}

/** One user of a loaded module fewer; the last one finalizes it. */
function release(module: string): void {
  const entry = loaded.get(module);
  if (entry === undefined) return;
  entry.users -= 1;
  if (entry.users > 0) return;
  loaded.delete(module);
  try {
    entry.p.C_Finalize();
  } catch {
    // nothing is left to use the module
  }
}
