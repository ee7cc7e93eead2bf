import { defaultCryptoProvider } from '#crypto/default';
import type { CryptoProvider } from '../crypto/provider.js';
import { toHex, utf8 } from '../encoding/bytes.js';
import { olpcCanonicalText } from '../encoding/olpc.js';
import { ReleaseError } from '../errors.js';

/**
 * contracts §1: the key id of a key inside TUF metadata (root and the online roles: `keys`,
 * `roles.*.keyids`, `signatures[].keyid`), as the TUF specification defines KEYID and
 * python-tuf and go-tuf compute it: lowercase hex SHA-256 of the OLPC canonical JSON of
 * `{"keytype", "scheme", "keyval"}`. For an Ed25519 key: keytype and scheme `ed25519`, keyval
 * `{"public": <hex of the raw 32-byte key>}`. Everywhere else (DSSE, authorizer keys,
 * receipts, API fields) a key id is `keyIdOf` (`sha256:` + hex SHA-256 of the SPKI DER).
 */
export function tufKeyId(keytype: string, scheme: string, keyval: Readonly<Record<string, string>>, crypto: CryptoProvider = defaultCryptoProvider): string {
  for (const [field, v] of [
    ['keytype', keytype],
    ['scheme', scheme],
  ] as const) {
    if (typeof v !== 'string' || v.length === 0)
      throw new ReleaseError('CANONICALIZE_FAILED', `cannot compute a TUF key id: ${field} must be a non-empty string`);
  }
  if (typeof keyval !== 'object' || keyval === null || Array.isArray(keyval)) {
    throw new ReleaseError('CANONICALIZE_FAILED', 'cannot compute a TUF key id: keyval must be an object of strings');
  }
  for (const [k, v] of Object.entries(keyval)) {
    if (typeof v !== 'string') throw new ReleaseError('CANONICALIZE_FAILED', `cannot compute a TUF key id: keyval.${k} must be a string`);
  }
  return toHex(crypto.sha256(utf8(olpcCanonicalText({ keytype, scheme, keyval }))));
}
