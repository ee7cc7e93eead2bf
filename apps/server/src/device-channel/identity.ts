import { x509 } from './x509.js';
import { invalidInput, ServerError } from '../errors/server-error.js';

/** contracts 4: device names */
export const DEVICE_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,62}$/;
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function spiffeId(tenantId: string, deviceName: string): string {
  return `spiffe://${tenantId}/device/${deviceName}`;
}

export function assertDeviceName(name: string, field: string): void {
  // contracts 4: ^[a-z0-9][a-z0-9._-]{0,62}$
  if (!DEVICE_NAME_PATTERN.test(name)) {
    throw invalidInput(field, `must match ${DEVICE_NAME_PATTERN.source}, got ${JSON.stringify(name.slice(0, 80))}`);
  }
}

/**
 * Tenant and device a device certificate names: CN = device name and exactly one SAN URI
 * `spiffe://<tenant uuid>/device/<name>` that agrees with it (contracts 4). Throws
 * UNAUTHENTICATED naming what is wrong.
 */
export function certificateIdentity(cert: x509.X509Certificate): { tenantId: string; deviceName: string } {
  const cns = cert.subjectName.getField('CN');
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  const uris = (san?.names.items ?? []).filter((n) => n.type === 'url').map((n) => n.value);
  if (cns.length !== 1 || uris.length !== 1) {
    throw new ServerError('UNAUTHENTICATED', 'client certificate: needs exactly one CN and one SAN URI');
  }
  const m = /^spiffe:\/\/([^/]+)\/device\/([^/]+)$/.exec(uris[0] ?? '');
  if (m === null || !UUID_PATTERN.test(m[1] ?? '') || m[2] !== cns[0] || !DEVICE_NAME_PATTERN.test(m[2] ?? '')) {
    throw new ServerError('UNAUTHENTICATED', 'client certificate: SAN URI must be spiffe://<tenant>/device/<CN>');
  }
  return { tenantId: m[1] as string, deviceName: m[2] as string };
}
