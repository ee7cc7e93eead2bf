import { defaultCryptoProvider } from '#crypto/default';
import type { CryptoProvider } from '../crypto/provider.js';
import { type Digest, sha256Digest } from '../digest.js';
import { canonicalize } from '../encoding/jcs.js';

export interface GroupSnapshot {
  tenant: string;
  group: string;
  members: readonly string[];
}

/**
 * contracts §2: sha256 over JCS({"tenant", "group", "members": [sorted by UTF-16 code units,
 * unique]}). JS's default sort compares UTF-16 code units, which is exactly the rule; the
 * server and the CLI compute the same value whatever order members were added in.
 */
export function targetPolicyDigest(snapshot: GroupSnapshot, crypto: CryptoProvider = defaultCryptoProvider): Digest {
  const members = [...new Set(snapshot.members)].sort();
  return sha256Digest(canonicalize({ tenant: snapshot.tenant, group: snapshot.group, members }), crypto);
}
