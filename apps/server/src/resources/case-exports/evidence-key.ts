/**
 * The per-tenant evidence key: an Ed25519 key the service signs case-export manifests with,
 * stored like the signing repository's keys (`<SVC_DATA_DIR>/keys/<tenant>/evidence.pem`,
 * directory 0700, file 0600, created once, shared by every server process through the same
 * exclusive-create rule). Its public key is downloadable (GET /evidence-key) so an auditor can
 * verify an export offline with `svc-release verify-evidence`.
 */
import { parsePrivateKeyPem, type PrivateKey } from '@svc/release-core';
import { KeyStore } from '../../signing-repo/keys.js';

export interface EvidenceKey {
  privateKey: PrivateKey;
  keyid: string;
  publicKeyPem: string;
}

/** `keysRoot` is the signing repository's key directory (`SigningRepository.keys.root`). */
export async function evidenceKey(keysRoot: string, tenantId: string): Promise<EvidenceKey> {
  const stored = await new KeyStore<'evidence'>(keysRoot).loadOrCreate(tenantId, 'evidence');
  const privateKey = parsePrivateKeyPem(stored.pem);
  return { privateKey, keyid: privateKey.publicKey.keyid, publicKeyPem: privateKey.publicKey.pem };
}
