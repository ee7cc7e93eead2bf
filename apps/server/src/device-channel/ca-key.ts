import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';

export type CaKeyState = { state: 'ok'; keyPem: string } | { state: 'missing' | 'unreadable' | 'mismatch'; problem: string };

/**
 * A CA's key file against the CA certificate it belongs to: present, a readable PKCS#8
 * private key, and the private half of the certificate's public key. `label` names the key
 * (and its tenant) in the one-line `problem`.
 */
export async function inspectCaKey(label: string, certDer: Uint8Array, keyPath: string): Promise<CaKeyState> {
  let keyPem: string;
  try {
    keyPem = await readFile(keyPath, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { state: 'missing', problem: `${label} is missing (${keyPath})` };
    return { state: 'unreadable', problem: `${label} is unreadable (${keyPath}: ${(e as Error).message})` };
  }
  let spki: Buffer;
  try {
    spki = createPublicKey(createPrivateKey({ key: keyPem, format: 'pem' })).export({ format: 'der', type: 'spki' });
  } catch (e) {
    return { state: 'unreadable', problem: `${label} is unreadable (${keyPath}: ${e instanceof Error ? e.message : String(e)})` };
  }
  const certSpki = new X509Certificate(Buffer.from(certDer)).publicKey.export({ format: 'der', type: 'spki' });
  if (!spki.equals(certSpki)) return { state: 'mismatch', problem: `${label} does not match the CA certificate it belongs to (${keyPath})` };
  return { state: 'ok', keyPem };
}
