import { createPrivateKey } from 'node:crypto';
import { digestHex, parseCertificateDer, sha256Digest, type Certificate } from '@svc/release-core';
import type { Kysely } from 'kysely';
import { rotateDeviceCa, type RotatedDeviceCa } from '../resources/device-ca/commands.js';
import { allDeviceCaCertificates, caTrustedAt, getDeviceCa, insertDeviceCa, tenantDeviceCas, type DeviceCaRow } from '../resources/device-ca/queries.js';
import { runUnitOfWork, type Actor } from '../resources/unit-of-work.js';
import type { Database } from '../store/database.js';
import { ServerError } from '../errors/server-error.js';
import { deviceCaKeyRef, inspectCaKey } from './ca-key.js';
import type { WrappedKeys } from '../key-custody/wrapped-keys.js';
import type { Db } from '../store/tx.js';
import { createCa, loadCa, type CaMaterial } from './pki.js';

/** A device CA lives ten years; device certificates are short-lived and renewed. */
const CA_VALID_DAYS = 3650;

/** One device CA of a tenant as verification needs it: current, or retired and trusted until `trustedUntil`. */
export interface TenantCa {
  seq: number;
  /** Parsed once (release-core's reader; `cert.der` is its DER): the anchor a device certificate is checked against (peer.ts). */
  cert: Certificate;
  retiredAt: Date | undefined;
  trustedUntil: Date | undefined;
}

/**
 * The per-tenant device CAs (contracts §4). A tenant's first CA is created on first use; a
 * rotation (SVC_KEY_RECOVERY=device-ca-rotate, docs/device-channel.md "Device CA rotation")
 * retires it and makes a new one current. The certificates are stored in `device_cas` so
 * several server processes agree on them; the current CA's key is wrapped by the KEK in
 * `wrapped_keys` (key-custody/), stored in the same transaction as its certificate's row and
 * named after the certificate so a losing concurrent creator's key can never be mistaken for
 * the winner's. The current CA issues; the current one and the retired ones
 * inside their trust window verify.
 *
 * What this store read is cached until `invalidate()`: this process calls it after its own
 * rotation, and the device channel calls it when the set of trusted CA certificates it re-reads
 * (at every `svc_device_cas` NOTIFY of another process, and periodically) has changed.
 */
export class DeviceCaStore {
  /** The current CA with its key, per tenant. */
  private readonly cache = new Map<string, Promise<CaMaterial>>();
  /** Every CA of a tenant, newest first. */
  private readonly cas = new Map<string, Promise<TenantCa[]>>();
  private gen = 0;

  /** Called after this process created or rotated a tenant CA (the channel re-reads its TLS trust store). */
  onChanged: (() => Promise<void>) | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly keys: WrappedKeys,
  ) {}

  /** Changes at every `invalidate()`: what was derived from the CAs before (peer.ts's checks) is stale when it differs. */
  get generation(): number {
    return this.gen;
  }

  /** Forgets every CA read so far: the next use reads the database again. */
  invalidate(): void {
    this.gen += 1;
    this.cache.clear();
    this.cas.clear();
  }

  /** Every tenant's device CA certificates (DER) trusted at `now`: the TLS trust store of the device port. */
  allCertificates(now: Date): Promise<Uint8Array[]> {
    return allDeviceCaCertificates(this.db, now);
  }

  /** The tenant's current CA with its signing key, creating both when the tenant has none yet. */
  get(tenantId: string, now: Date): Promise<CaMaterial> {
    return this.cached(this.cache, tenantId, () => this.load(tenantId, now));
  }

  /** Every CA of the tenant, current and retired, newest first; empty while it has none (asked again next time). */
  tenantCas(tenantId: string): Promise<TenantCa[]> {
    return this.cached(this.cas, tenantId, async () => {
      const rows = await tenantDeviceCas(this.db, tenantId);
      if (rows.length === 0) throw new NoCaYet();
      return rows.map(tenantCa);
    }).catch((e: unknown) => {
      if (e instanceof NoCaYet) return [];
      throw e;
    });
  }

  /** The tenant's CA certificates (DER) trusted at `at`, current first: what a receipt is verified against. */
  async certificatesDer(tenantId: string, at: Date): Promise<Uint8Array[]> {
    return (await this.tenantCas(tenantId)).filter((ca) => caTrustedAt(ca, at)).map((ca) => ca.cert.der);
  }

  /** A cached read: a failed one is asked again next time, and never evicts a newer read. */
  private cached<T>(map: Map<string, Promise<T>>, tenantId: string, read: () => Promise<T>): Promise<T> {
    let p = map.get(tenantId);
    if (p === undefined) {
      const q = read();
      map.set(tenantId, q);
      q.catch(() => {
        if (map.get(tenantId) === q) map.delete(tenantId);
      });
      p = q;
    }
    return p;
  }

  private async load(tenantId: string, now: Date): Promise<CaMaterial> {
    const existing = await getDeviceCa(this.db, tenantId);
    if (existing !== undefined) return this.open(tenantId, existing.certDer, existing.keyFile);

    const next = await this.newCa(tenantId, 1, now);
    const won = await this.db.transaction().execute(async (trx) => {
      if (!(await insertDeviceCa(trx, tenantId, next.certDer, next.keyFile))) return false;
      await next.store(trx);
      return true;
    });
    if (won) {
      await this.onChanged?.();
      return this.open(tenantId, next.certDer, next.keyFile);
    }
    // Another process won the race: use its CA (ours was never stored).
    const winner = (await getDeviceCa(this.db, tenantId))!;
    return this.open(tenantId, winner.certDer, winner.keyFile);
  }

  /** A new CA certificate, and `store`, which writes its wrapped key in the transaction that records the certificate. */
  private async newCa(tenantId: string, seq: number, now: Date): Promise<{ certDer: Uint8Array; keyFile: string; store: (db: Db) => Promise<void> }> {
    // a rotated CA has a name of its own, so issuer names tell the tenant's CAs apart
    const { certDer, keyPem } = await createCa(`svc device CA ${tenantId}${seq > 1 ? ` #${seq}` : ''}`, now, CA_VALID_DAYS);
    const keyFile = `device-ca-${digestHex(sha256Digest(certDer)).slice(0, 16)}.key`;
    const privateKey = createPrivateKey({ key: keyPem, format: 'pem' });
    return { certDer, keyFile, store: (db) => this.keys.put(deviceCaKeyRef(tenantId, keyFile), privateKey, { db }) };
  }

  /**
   * Replaces the tenant's current device CA by a new one (docs/device-channel.md "Device CA
   * rotation"): one unit of work retires the old CA (its certificate stays, trusted until the
   * last certificate it issued expires), records the new one as current with its wrapped key
   * and writes the audit row. Needs no key of the old CA.
   */
  async rotate(tenantId: string, now: Date, actor: Actor): Promise<RotatedDeviceCa> {
    const current = await getDeviceCa(this.db, tenantId);
    if (current === undefined) throw new ServerError('NOT_FOUND', `tenant ${tenantId} has no device CA to rotate`);
    const next = await this.newCa(tenantId, current.seq + 1, now);
    const rotated = await runUnitOfWork(this.db, { tenant: tenantId, actor, now }, (uow) => rotateDeviceCa(uow, { previousSeq: current.seq, next }));
    this.invalidate();
    await this.onChanged?.();
    return rotated;
  }

  /** The wrapped keys this store reads and writes (the key check inspects them). */
  get wrappedKeys(): WrappedKeys {
    return this.keys;
  }

  /** The CA with its key; KEY_UNAVAILABLE naming the key when it is missing, unreadable or not the certificate's. */
  private async open(tenantId: string, certDer: Uint8Array, keyFile: string): Promise<CaMaterial> {
    const found = await inspectCaKey(deviceCaKeyLabel(tenantId), certDer, this.keys, deviceCaKeyRef(tenantId, keyFile));
    if (found.state !== 'ok') throw new ServerError('KEY_UNAVAILABLE', `KEY_UNAVAILABLE: ${found.problem}`);
    return loadCa(certDer, found.keyPem);
  }
}

class NoCaYet extends Error {}

function tenantCa(r: DeviceCaRow): TenantCa {
  return { seq: r.seq, cert: parseCertificateDer(r.certDer), retiredAt: r.retiredAt, trustedUntil: r.trustedUntil };
}

/** How a tenant's device CA key is named in failures and in the key check. */
export function deviceCaKeyLabel(tenantId: string): string {
  return `device CA key of tenant ${tenantId}`;
}
