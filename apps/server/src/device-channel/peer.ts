import type { Kysely } from 'kysely';
import { x509 } from './x509.js';
import type { Database } from '../store/database.js';
import type { DeviceCaStore } from './device-ca.js';
import { ServerError } from '../errors/server-error.js';
import { certificateIdentity } from './identity.js';
import { certFingerprint } from './pki.js';

/** The authenticated device behind a call. */
export interface DevicePeer {
  tenantId: string;
  deviceName: string;
  deviceId: string;
  certDer: Uint8Array;
  certNotAfter: Date;
}

/** Just the part of a grpc-js call this module reads (unary, streaming calls all have it). */
export interface CallWithAuth {
  getAuthContext(): { sslPeerCertificate?: { raw?: Buffer } } | null;
}

/** Bounds the work a stranger can make us do before the chain check. */
const MAX_CERT_BYTES = 8192;

/**
 * spec 5.7: every device call except enrollment is mTLS. The certificate on the connection
 * must chain to the tenant's device CA, be inside its validity, name an existing device
 * that is not decommissioned, and be that device's CURRENT certificate (revocation and
 * re-enrollment replace the fingerprint, so an older certificate stops working at once).
 */
export async function authenticatePeer(call: CallWithAuth, db: Kysely<Database>, cas: DeviceCaStore, now: Date): Promise<DevicePeer> {
  const raw = call.getAuthContext()?.sslPeerCertificate?.raw;
  if (raw === undefined || raw.length === 0) {
    // TLS hands over only a certificate that chains to one of the device CAs (credentials.ts)
    throw new ServerError('UNAUTHENTICATED', 'client certificate: missing or not issued by a device CA of this service (enroll first)');
  }
  if (raw.length > MAX_CERT_BYTES) throw new ServerError('UNAUTHENTICATED', 'client certificate: too large');
  let cert: x509.X509Certificate;
  try {
    cert = new x509.X509Certificate(new Uint8Array(raw));
  } catch (cause) {
    throw new ServerError('UNAUTHENTICATED', 'client certificate: not parseable', { cause });
  }
  const { tenantId, deviceName } = certificateIdentity(cert);
  const ca = await cas.certificate(tenantId);
  // contracts 4: issued by this tenant's device CA
  if (ca === undefined || cert.issuer !== ca.subject) {
    throw new ServerError('UNAUTHENTICATED', 'client certificate: not issued by the tenant device CA');
  }
  const valid = await cert.verify({ publicKey: ca.publicKey, signatureOnly: true }).catch(() => false);
  if (!valid) throw new ServerError('UNAUTHENTICATED', 'client certificate: signature does not chain to the tenant device CA');
  if (now < cert.notBefore || now > cert.notAfter) {
    throw new ServerError('UNAUTHENTICATED', `client certificate: outside its validity (${cert.notBefore.toISOString()} .. ${cert.notAfter.toISOString()})`);
  }
  const eku = cert.getExtension(x509.ExtendedKeyUsageExtension);
  if (eku === null || !eku.usages.includes(x509.ExtendedKeyUsage.clientAuth)) {
    throw new ServerError('UNAUTHENTICATED', 'client certificate: lacks the clientAuth extended key usage');
  }
  const row = await db
    .selectFrom('devices')
    .select(['id', 'status', 'cert_fingerprint'])
    .where('tenant_id', '=', tenantId)
    .where('name', '=', deviceName)
    .executeTakeFirst();
  if (row === undefined) throw new ServerError('PERMISSION_DENIED', `device ${deviceName}: removed; enroll again`);
  if (row.status === 'decommissioned') throw new ServerError('PERMISSION_DENIED', `device ${deviceName}: decommissioned`);
  const certDer = new Uint8Array(raw);
  if (row.cert_fingerprint !== certFingerprint(certDer)) {
    throw new ServerError('PERMISSION_DENIED', `device ${deviceName}: certificate revoked or superseded`);
  }
  return { tenantId, deviceName, deviceId: row.id, certDer, certNotAfter: cert.notAfter };
}
