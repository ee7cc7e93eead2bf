import type { DeviceChannelContext } from './context.js';
import { spiffeId } from './identity.js';
import { certFingerprint, issueCertificate } from './pki.js';
import { x509 } from './x509.js';

/**
 * Issues a device certificate (contracts 4: CN = device name, one SAN URI
 * spiffe://<tenant>/device/<name>, clientAuth) and appends it to `device_certificates`.
 */
export async function issueDeviceCertificate(
  ctx: DeviceChannelContext,
  a: { tenantId: string; deviceName: string; publicKey: x509.PublicKey; reason: 'enroll' | 'renew'; now: Date },
): Promise<{ der: Uint8Array; fingerprint: string; notAfter: Date }> {
  const ca = await ctx.cas.get(a.tenantId, a.now);
  const notAfter = new Date(a.now.getTime() + ctx.certValidDays * 86_400_000);
  const der = await issueCertificate(ca, {
    subjectCN: a.deviceName,
    publicKey: a.publicKey,
    usage: 'clientAuth',
    sanUris: [spiffeId(a.tenantId, a.deviceName)],
    // a little slack for device clocks behind the server's
    notBefore: new Date(a.now.getTime() - 5 * 60_000),
    notAfter,
  });
  const fingerprint = certFingerprint(der);
  await ctx.db
    .insertInto('device_certificates')
    .values({
      tenant_id: a.tenantId,
      device_name: a.deviceName,
      serial: new x509.X509Certificate(der).serialNumber,
      fingerprint,
      not_after: notAfter,
      reason: a.reason,
      issued_at: a.now,
    })
    .execute();
  return { der, fingerprint, notAfter };
}
