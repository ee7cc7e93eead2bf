import { mkdir, rm, writeFile } from 'node:fs/promises';
import { X509Certificate as NodeX509 } from 'node:crypto';
import { join } from 'node:path';
import { digestHex, sha256Digest } from '@svc/release-core';
import type { Kysely } from 'kysely';
import { rotateDeviceCa, type RotatedDeviceCa } from '../resources/device-ca/commands.js';
import { allDeviceCaCertificates, caTrustedAt, getDeviceCa, insertDeviceCa, tenantDeviceCas, type DeviceCaRow } from '../resources/device-ca/queries.js';
import { runUnitOfWork, type Actor } from '../resources/unit-of-work.js';
import type { Database } from '../store/database.js';
import { ServerError } from '../errors/server-error.js';
import { inspectCaKey } from './ca-key.js';
import { createCa, loadCa, type CaMaterial } from './pki.js';

/** A device CA lives ten years; device certificates are short-lived and renewed. */
const CA_VALID_DAYS = 3650;

/** One device CA of a tenant as verification needs it: current, or retired and trusted until `trustedUntil`. */
export interface TenantCa {
  seq: number;
  der: Uint8Array;
  /** node:crypto's view (peer checks on every call). */
  x509: NodeX509;
  retiredAt: Date | undefined;
  trustedUntil: Date | undefined;
}

/**
 * The per-tenant device CAs (contracts §4). A tenant's first CA is created on first use; a
 * rotation (SVC_KEY_RECOVERY=device-ca-rotate, docs/device-channel.md "Device CA rotation")
 * retires it and makes a new one current. The certificates are stored in `device_cas` so
 * several server processes agree on them; the current CA's key is a 0600 file in the shared
 * data dir, named after the certificate so a losing concurrent creator's key can never be
 * mistaken for the winner's. The current CA issues; the current one and the retired ones
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
    private readonly dataDir: string,
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

  private dir(tenantId: string): string {
    return join(this.dataDir, 'ca', tenantId);
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
    return (await this.tenantCas(tenantId)).filter((ca) => caTrustedAt(ca, at)).map((ca) => ca.der);
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

    const { certDer, keyFile } = await this.writeCa(tenantId, 1, now);
    if (await insertDeviceCa(this.db, tenantId, certDer, keyFile)) {
      await this.onChanged?.();
      return this.open(tenantId, certDer, keyFile);
    }
    // Another process won the race: use its CA, drop our unused key.
    await rm(this.keyPath(tenantId, keyFile), { force: true });
    const winner = (await getDeviceCa(this.db, tenantId))!;
    return this.open(tenantId, winner.certDer, winner.keyFile);
  }

  /** A new CA certificate and its key file (written before any row names it, so a row always has its key). */
  private async writeCa(tenantId: string, seq: number, now: Date): Promise<{ certDer: Uint8Array; keyFile: string }> {
    // a rotated CA has a name of its own, so issuer names tell the tenant's CAs apart
    const { certDer, keyPem } = await createCa(`svc device CA ${tenantId}${seq > 1 ? ` #${seq}` : ''}`, now, CA_VALID_DAYS);
    const keyFile = `device-ca-${digestHex(sha256Digest(certDer)).slice(0, 16)}.key`;
    await mkdir(this.dir(tenantId), { recursive: true, mode: 0o700 });
    await writeFile(join(this.dir(tenantId), keyFile), keyPem, { mode: 0o600, flag: 'wx' });
    return { certDer, keyFile };
  }

  /**
   * Replaces the tenant's current device CA by a new one (docs/device-channel.md "Device CA
   * rotation"): the new key is written, then one unit of work retires the old CA (its
   * certificate stays, trusted until the last certificate it issued expires), records the new
   * one as current and writes the audit row. Needs no key of the old CA.
   */
  async rotate(tenantId: string, now: Date, actor: Actor): Promise<RotatedDeviceCa> {
    const current = await getDeviceCa(this.db, tenantId);
    if (current === undefined) throw new ServerError('NOT_FOUND', `tenant ${tenantId} has no device CA to rotate`);
    const next = await this.writeCa(tenantId, current.seq + 1, now);
    let rotated: RotatedDeviceCa;
    try {
      rotated = await runUnitOfWork(this.db, { tenant: tenantId, actor, now }, (uow) => rotateDeviceCa(uow, { previousSeq: current.seq, next }));
    } catch (e) {
      await rm(this.keyPath(tenantId, next.keyFile), { force: true });
      throw e;
    }
    this.invalidate();
    await this.onChanged?.();
    return rotated;
  }

  /** Where the tenant's CA key file (named by its `device_cas` row) lives. */
  keyPath(tenantId: string, keyFile: string): string {
    return join(this.dir(tenantId), keyFile);
  }

  /** The CA with its key; KEY_UNAVAILABLE naming the key when it is missing, unreadable or not the certificate's. */
  private async open(tenantId: string, certDer: Uint8Array, keyFile: string): Promise<CaMaterial> {
    const found = await inspectCaKey(deviceCaKeyLabel(tenantId), certDer, this.keyPath(tenantId, keyFile));
    if (found.state !== 'ok') throw new ServerError('KEY_UNAVAILABLE', `KEY_UNAVAILABLE: ${found.problem}`);
    return loadCa(certDer, found.keyPem);
  }
}

class NoCaYet extends Error {}

function tenantCa(r: DeviceCaRow): TenantCa {
  return { seq: r.seq, der: r.certDer, x509: new NodeX509(Buffer.from(r.certDer)), retiredAt: r.retiredAt, trustedUntil: r.trustedUntil };
}

/** How a tenant's device CA key is named in failures and in the key check. */
export function deviceCaKeyLabel(tenantId: string): string {
  return `device CA key of tenant ${tenantId}`;
}
