import { mkdir, rm, writeFile } from 'node:fs/promises';
import { X509Certificate as NodeX509 } from 'node:crypto';
import { join } from 'node:path';
import { digestHex, sha256Digest } from '@svc/release-core';
import type { Kysely } from 'kysely';
import { allDeviceCaCertificates, deviceCaCertificate, getDeviceCa, insertDeviceCa } from '../resources/device-ca/queries.js';
import type { Database } from '../store/database.js';
import { ServerError } from '../errors/server-error.js';
import { inspectCaKey } from './ca-key.js';
import { createCa, loadCa, type CaMaterial } from './pki.js';

/** A device CA lives ten years; device certificates are short-lived and renewed. */
const CA_VALID_DAYS = 3650;

/**
 * The per-tenant device CA (contracts §4), created on first use. The certificate is stored
 * in `device_cas` so several server processes agree on one CA; its key is a 0600 file in
 * the shared data dir, named after the certificate so a losing concurrent creator's key can
 * never be mistaken for the winner's. The CA never changes once created, so caching it in
 * memory is safe.
 */
export class DeviceCaStore {
  private readonly cache = new Map<string, Promise<CaMaterial>>();
  /** CA certificates for verifying peers (node:crypto, fast); immutable once created. */
  private readonly verifiers = new Map<string, NodeX509>();
  /** CA certificates (DER) for receipt verification; immutable once created. */
  private readonly certificates = new Map<string, Promise<Uint8Array | undefined>>();

  /** Called after this process created a tenant CA (the channel adds it to its TLS trust store). */
  onCreated: (() => Promise<void>) | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dataDir: string,
  ) {}

  /** Every tenant's device CA certificate (DER): the TLS trust store of the device port. */
  allCertificates(): Promise<Uint8Array[]> {
    return allDeviceCaCertificates(this.db);
  }

  private dir(tenantId: string): string {
    return join(this.dataDir, 'ca', tenantId);
  }

  /** The tenant's CA with its signing key, creating both when the tenant has none yet. */
  get(tenantId: string, now: Date): Promise<CaMaterial> {
    let p = this.cache.get(tenantId);
    if (p === undefined) {
      p = this.load(tenantId, now);
      this.cache.set(tenantId, p);
      p.catch(() => this.cache.delete(tenantId));
    }
    return p;
  }

  /** The tenant CA as node:crypto X509Certificate (peer checks on every call); undefined when none. */
  async verifier(tenantId: string): Promise<NodeX509 | undefined> {
    const hit = this.verifiers.get(tenantId);
    if (hit !== undefined) return hit;
    const der = await deviceCaCertificate(this.db, tenantId);
    if (der === undefined) return undefined;
    const v = new NodeX509(Buffer.from(der));
    this.verifiers.set(tenantId, v);
    return v;
  }

  /** The tenant CA certificate (DER), read once; undefined while the tenant has none. */
  certificateDer(tenantId: string): Promise<Uint8Array | undefined> {
    let p = this.certificates.get(tenantId);
    if (p === undefined) {
      p = deviceCaCertificate(this.db, tenantId);
      this.certificates.set(tenantId, p);
      // a tenant without a CA yet, or a failed read, is asked again next time
      p.then(
        (der) => (der === undefined ? this.certificates.delete(tenantId) : undefined),
        () => this.certificates.delete(tenantId),
      );
    }
    return p;
  }

  private async load(tenantId: string, now: Date): Promise<CaMaterial> {
    const existing = await getDeviceCa(this.db, tenantId);
    if (existing !== undefined) return this.open(tenantId, existing.certDer, existing.keyFile);

    const { certDer, keyPem } = await createCa(`svc device CA ${tenantId}`, now, CA_VALID_DAYS);
    const keyFile = `device-ca-${digestHex(sha256Digest(certDer)).slice(0, 16)}.key`;
    await mkdir(this.dir(tenantId), { recursive: true, mode: 0o700 });
    // The key is on disk before the row exists, so a row always has its key.
    await writeFile(join(this.dir(tenantId), keyFile), keyPem, { mode: 0o600, flag: 'wx' });
    if (await insertDeviceCa(this.db, tenantId, certDer, keyFile)) {
      await this.onCreated?.();
      return this.open(tenantId, certDer, keyFile);
    }
    // Another process won the race: use its CA, drop our unused key.
    await rm(join(this.dir(tenantId), keyFile), { force: true });
    const winner = (await getDeviceCa(this.db, tenantId))!;
    return this.open(tenantId, winner.certDer, winner.keyFile);
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

/** How a tenant's device CA key is named in failures and in the key check. */
export function deviceCaKeyLabel(tenantId: string): string {
  return `device CA key of tenant ${tenantId}`;
}
