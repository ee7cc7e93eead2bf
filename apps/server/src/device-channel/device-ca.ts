import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { X509Certificate as NodeX509 } from 'node:crypto';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { x509 } from './x509.js';
import type { Database } from '../store/database.js';
import { certFingerprint, createCa, loadCa, type CaMaterial } from './pki.js';

/** A device CA lives ten years; device certificates are short-lived and renewed. */
const CA_VALID_DAYS = 3650;

/**
 * The per-tenant device CA (contracts 4), created on first use. The certificate is stored
 * in `device_cas` so several server processes agree on one CA; its key is a 0600 file in
 * the shared data dir, named after the certificate so a losing concurrent creator's key can
 * never be mistaken for the winner's. The CA never changes once created, so caching it in
 * memory is safe.
 */
export class DeviceCaStore {
  private readonly cache = new Map<string, Promise<CaMaterial>>();
  /** CA certificates for verifying peers (node:crypto, fast); immutable once created. */
  private readonly verifiers = new Map<string, NodeX509>();

  /** Called after this process created a tenant CA (the channel adds it to its TLS trust store). */
  onCreated: (() => Promise<void>) | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dataDir: string,
  ) {}

  /** Every tenant's device CA certificate (DER): the TLS trust store of the device port. */
  async allCertificates(): Promise<Uint8Array[]> {
    const rows = await this.db.selectFrom('device_cas').select('cert_der').orderBy('created_at').execute();
    return rows.map((r) => new Uint8Array(r.cert_der));
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
    const row = await this.db.selectFrom('device_cas').select('cert_der').where('tenant_id', '=', tenantId).executeTakeFirst();
    if (row === undefined) return undefined;
    const v = new NodeX509(Buffer.from(row.cert_der));
    this.verifiers.set(tenantId, v);
    return v;
  }

  private async load(tenantId: string, now: Date): Promise<CaMaterial> {
    const existing = await this.db.selectFrom('device_cas').selectAll().where('tenant_id', '=', tenantId).executeTakeFirst();
    if (existing !== undefined) return this.open(tenantId, new Uint8Array(existing.cert_der), existing.key_file);

    const { certDer, keyPem } = await createCa(`svc device CA ${tenantId}`, now, CA_VALID_DAYS);
    const keyFile = `device-ca-${certFingerprint(certDer).slice('sha256:'.length, 'sha256:'.length + 16)}.key`;
    await mkdir(this.dir(tenantId), { recursive: true, mode: 0o700 });
    // The key is on disk before the row exists, so a row always has its key.
    await writeFile(join(this.dir(tenantId), keyFile), keyPem, { mode: 0o600, flag: 'wx' });
    const inserted = await this.db
      .insertInto('device_cas')
      .values({ tenant_id: tenantId, cert_der: certDer, key_file: keyFile })
      .onConflict((oc) => oc.column('tenant_id').doNothing())
      .returning('tenant_id')
      .executeTakeFirst();
    if (inserted !== undefined) {
      await this.onCreated?.();
      return this.open(tenantId, certDer, keyFile);
    }
    // Another process won the race: use its CA, drop our unused key.
    await rm(join(this.dir(tenantId), keyFile), { force: true });
    const winner = await this.db.selectFrom('device_cas').selectAll().where('tenant_id', '=', tenantId).executeTakeFirstOrThrow();
    return this.open(tenantId, new Uint8Array(winner.cert_der), winner.key_file);
  }

  private async open(tenantId: string, certDer: Uint8Array, keyFile: string): Promise<CaMaterial> {
    const keyPem = await readFile(join(this.dir(tenantId), keyFile), 'utf8');
    return loadCa(certDer, keyPem);
  }
}
