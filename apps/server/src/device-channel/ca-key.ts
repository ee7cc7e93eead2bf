import { createPublicKey, X509Certificate } from 'node:crypto';
import { KekError } from '../key-custody/kek.js';
import { keyIdOfRef, type KeyRef, type WrappedKeys } from '../key-custody/wrapped-keys.js';

export type CaKeyState = { state: 'ok'; keyPem: string } | { state: 'missing' | 'unreadable' | 'mismatch'; problem: string };

/** Where a tenant's device CA key is stored: `<tenant>/device-ca/<key name of its device_cas row>`. */
export function deviceCaKeyRef(tenantId: string, keyFile: string): KeyRef {
  return { tenantId, name: `device-ca/${keyFile}` };
}

/** The server CA of the device channel: `server/server-ca`, its certificate stored beside the key. */
export const SERVER_CA_KEY_REF: KeyRef = { tenantId: null, name: 'server-ca' };

/**
 * A CA's wrapped key against the CA certificate it belongs to: stored, opened by the KEK, and
 * the private half of the certificate's public key. `label` names the key (and its tenant)
 * in the one-line `problem`.
 */
export async function inspectCaKey(label: string, certDer: Uint8Array, keys: WrappedKeys, ref: KeyRef): Promise<CaKeyState> {
  const where = `wrapped key ${keyIdOfRef(ref)}`;
  let found;
  try {
    found = await keys.load(ref);
  } catch (e) {
    if (!(e instanceof KekError)) throw e;
    return { state: 'unreadable', problem: `${label} is unreadable (${where}: ${e.message})` };
  }
  if (found === undefined) return { state: 'missing', problem: `${label} is missing (${where})` };
  const spki = createPublicKey(found.privateKey).export({ format: 'der', type: 'spki' });
  const certSpki = new X509Certificate(Buffer.from(certDer)).publicKey.export({ format: 'der', type: 'spki' });
  if (!spki.equals(certSpki)) return { state: 'mismatch', problem: `${label} does not match the CA certificate it belongs to (${where})` };
  return { state: 'ok', keyPem: found.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString() };
}
