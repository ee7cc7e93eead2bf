import type { KeyObject } from 'node:crypto';
import { deviceIdentity, isReleaseError, parseCertificateDer, sha256Digest, verifyCertificateChainToAny, LIMITS, type Certificate } from '@svc/release-core';
import type { Kysely } from 'kysely';
import { ServerError } from '../errors/server-error.js';
import { deviceCredentialRow, promoteRenewedCertificate } from '../resources/devices/queries/identity.js';
import type { Database } from '../store/database.js';
import type { CallWithPeer, ConnectionCertificates } from './connections.js';
import type { DeviceCredentialCache } from './credential-cache.js';
import type { DeviceCaStore } from './device-ca.js';
import { SERVER_TUNING } from '../limits.js';

/** The authenticated device behind a call. */
export interface DevicePeer {
  tenantId: string;
  deviceName: string;
  deviceId: string;
  certDer: Uint8Array;
  certNotAfter: Date;
  /** The certificate's public key as the connection's TLS handshake decoded it, when known. */
  publicKey?: KeyObject;
}

/** Just the part of a grpc-js call this module reads (unary, streaming calls all have it). */
export interface CallWithAuth extends CallWithPeer {
  getAuthContext(): { sslPeerCertificate?: { raw?: Buffer } } | null;
}

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

/**
 * What a certificate's check found, kept per fingerprint for every device a process serves, so
 * kept small: times as epoch milliseconds rather than Date objects, the tenant id as the one
 * string of its tenant (`tenantIdOf`).
 */
interface CertFacts {
  tenantId: string;
  deviceName: string;
  notBefore: number;
  notAfter: number;
  /** The issuing CA is a retired one: trusted until then (docs/device-channel.md "Device CA rotation"). */
  caSeq: number;
  caTrustedUntil: number | undefined;
  /** The CA store's generation the facts were derived in (a rotation makes them stale). */
  generation: number;
}

/** One string per tenant id for all the facts of its devices, instead of a copy per certificate. */
const tenantIds = new Map<string, string>();
function tenantIdOf(id: string): string {
  const known = tenantIds.get(id);
  if (known !== undefined) return known;
  if (tenantIds.size >= SERVER_TUNING.peerCertCacheEntries) tenantIds.clear();
  tenantIds.set(id, id);
  return id;
}

/**
 * Parsing and chain-checking a certificate is a pure function of its bytes and the tenant's
 * CAs, so the result is cached by fingerprint, per CA store, until the store's set of CAs
 * changes (its generation). Bounded; oldest entries go first. Revocation is never cached
 * here: the device row decides it (through the notified DeviceCredentialCache).
 */
const checkedBy = new WeakMap<DeviceCaStore, Map<string, CertFacts>>();

function refuse(msg: string): ServerError {
  return new ServerError('UNAUTHENTICATED', `client certificate: ${msg}`);
}

/**
 * The facts of a certificate seen for the first time: read with release-core's DER reader
 * (node:crypto's X509Certificate costs ~0.25 ms to decode one through OpenSSL 3, per new
 * connection at fleet scale), identity per contracts §4 (CN = device name, exactly one SAN URI
 * spiffe://<tenant>/device/<CN>), issued by one of THIS tenant's device CAs, current or retired
 * (TLS only proved it chains to some tenant's), with the clientAuth extended key usage.
 */
async function checkCertificate(raw: Buffer, fingerprint: string, cas: DeviceCaStore, now: Date): Promise<CertFacts> {
  let checked = checkedBy.get(cas);
  if (checked === undefined) {
    checked = new Map();
    checkedBy.set(cas, checked);
  }
  const generation = cas.generation;
  const hit = checked.get(fingerprint);
  if (hit !== undefined && hit.generation === generation) return hit;
  let cert: Certificate;
  try {
    cert = parseCertificateDer(raw);
  } catch {
    throw refuse('not parseable');
  }
  let identity: { tenant: string; device: string };
  try {
    identity = deviceIdentity(cert);
  } catch {
    throw refuse('needs subject CN=<device> and exactly one SAN URI spiffe://<tenant>/device/<device>');
  }
  const tenantCas = await cas.tenantCas(identity.tenant);
  let anchor: Certificate;
  try {
    anchor = verifyCertificateChainToAny(
      cert,
      tenantCas.map((c) => c.cert),
      { now },
    );
  } catch (e) {
    if (isReleaseError(e) && e.code === 'CERT_EXPIRED')
      throw refuse(`outside its validity (${cert.notBefore.toISOString()} .. ${cert.notAfter.toISOString()})`);
    throw refuse('not issued by the tenant device CA');
  }
  const ca = tenantCas.find((c) => c.cert === anchor)!;
  if (!(cert.extendedKeyUsage ?? []).includes(CLIENT_AUTH)) throw refuse('lacks the clientAuth extended key usage');
  const facts: CertFacts = {
    tenantId: tenantIdOf(identity.tenant),
    deviceName: identity.device,
    notBefore: cert.notBefore.getTime(),
    notAfter: cert.notAfter.getTime(),
    caSeq: ca.seq,
    caTrustedUntil: ca.trustedUntil?.getTime(),
    generation,
  };
  if (checked.size >= SERVER_TUNING.peerCertCacheEntries) checked.delete(checked.keys().next().value as string);
  checked.set(fingerprint, facts);
  return facts;
}

/**
 * spec §5 rule 7: every device call except enrollment is mTLS. The certificate on the connection
 * must chain to a device CA of the tenant (the current one, or a retired one inside its trust
 * window), be inside its validity, name an existing device
 * that is not decommissioned, and be that device's CURRENT certificate (re-enrollment
 * replaces the fingerprint, so an older certificate stops working at once; a renewed one
 * becomes current at its first use, and the one it replaces stops working then).
 *
 * The device row's verdict is remembered in `credentials` (credential-cache.ts): a call whose
 * certificate was accepted before costs no database round trip until a change to the device
 * clears the cache in every process (migration 0042), the entry is 10 minutes old, or the
 * listener is not live (down, or no fence proved it current in the last 10 s: store/notify.ts).
 */
export async function authenticatePeer(
  call: CallWithAuth,
  db: Kysely<Database>,
  cas: DeviceCaStore,
  credentials: DeviceCredentialCache,
  now: Date,
  connections?: ConnectionCertificates,
): Promise<DevicePeer> {
  const connection = connections?.of(call);
  const raw = connection?.der ?? call.getAuthContext()?.sslPeerCertificate?.raw;
  if (raw === undefined || raw.length === 0) {
    // TLS hands over only a certificate that chains to one of the device CAs and is inside
    // its validity (credentials.ts): an expired one arrives here as none
    throw refuse('missing, expired, or not issued by a device CA of this service (enroll first)');
  }
  // bounds the work a stranger can make us do before the chain check (the receipt's embedded certificate has the same bound)
  if (raw.length > LIMITS.certificateBytes) throw refuse('too large');
  const fingerprint = connection?.fingerprint ?? sha256Digest(raw);
  const c = await checkCertificate(raw, fingerprint, cas, now);
  // a retired device CA verifies only inside its trust window (the TLS trust store drops it at its next refresh)
  const at = now.getTime();
  if (c.caTrustedUntil !== undefined && at > c.caTrustedUntil) {
    throw refuse(`issued by the retired device CA ${c.caSeq} of the tenant, trusted until ${new Date(c.caTrustedUntil).toISOString()} (enroll again)`);
  }
  if (at < c.notBefore || at > c.notAfter) {
    throw refuse(`outside its validity (${new Date(c.notBefore).toISOString()} .. ${new Date(c.notAfter).toISOString()})`);
  }
  const known = credentials.deviceIdOf(c.tenantId, c.deviceName, fingerprint);
  if (known !== undefined) return peerOf(c, known, raw, connection?.publicKey);
  const generation = credentials.begin();
  const row = await deviceCredentialRow(db, c.tenantId, c.deviceName);
  if (row === undefined) throw new ServerError('PERMISSION_DENIED', `device ${c.deviceName}: removed; enroll again`);
  if (row.status === 'decommissioned') throw new ServerError('PERMISSION_DENIED', `device ${c.deviceName}: decommissioned`);
  if (row.cert_fingerprint !== fingerprint) {
    // the first call with a freshly renewed certificate makes it current (resources/devices/queries/identity.ts)
    const promoted = await promoteRenewedCertificate(db, {
      tenantId: c.tenantId,
      deviceName: c.deviceName,
      deviceId: row.id,
      currentFingerprint: row.cert_fingerprint,
      fingerprint,
      now,
    });
    if (!promoted) throw new ServerError('PERMISSION_DENIED', `device ${c.deviceName}: certificate revoked or superseded`);
    // the replaced certificate stops working here at once, not when the notification arrives
    // (this also drops the remember below: the cache learns the new one at its next call)
    credentials.clear();
  }
  credentials.remember(fingerprint, row.id, generation);
  return peerOf(c, row.id, raw, connection?.publicKey);
}

function peerOf(c: CertFacts, deviceId: string, raw: Buffer, publicKey: KeyObject | undefined): DevicePeer {
  const peer: DevicePeer = { tenantId: c.tenantId, deviceName: c.deviceName, deviceId, certDer: new Uint8Array(raw), certNotAfter: new Date(c.notAfter) };
  if (publicKey !== undefined) peer.publicKey = publicKey;
  return peer;
}
