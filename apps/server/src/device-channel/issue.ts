import { sha256Digest } from '@svc/release-core';
import type { SignedDeviceCertificate } from '../resources/devices/commands.js';
import type { DeviceChannelContext } from './context.js';
import { issueLeaf } from './device-cert.js';
import { spiffeId } from './identity.js';

/**
 * Signs a device certificate with the tenant's CA (contracts §4: CN = device name, one SAN URI
 * spiffe://<tenant>/device/<name>, clientAuth), creating the CA on the tenant's first use.
 * No database round trip once the CA is cached. Nothing about the certificate is stored
 * here: the enrollment or renewal command records it in the unit of work that makes it the
 * device's certificate.
 */
export async function issueDeviceCertificate(
  ctx: DeviceChannelContext,
  a: { tenantId: string; deviceName: string; spki: Uint8Array; now: Date },
): Promise<SignedDeviceCertificate & { der: Uint8Array }> {
  const ca = await ctx.cas.get(a.tenantId, a.now);
  const notAfter = new Date(a.now.getTime() + ctx.certValidDays * 86_400_000);
  const { der, serial } = issueLeaf(ca.signer, {
    subjectCN: a.deviceName,
    spki: a.spki,
    usage: 'clientAuth',
    sanUris: [spiffeId(a.tenantId, a.deviceName)],
    // a little slack for device clocks behind the server's
    notBefore: new Date(a.now.getTime() - 5 * 60_000),
    notAfter,
  });
  return { der, fingerprint: sha256Digest(der), serial, notAfter };
}
