import { parsePublicKeyPem, type PublicKey } from '@svc/release-core';
import { notFound, ServerError } from '../../errors/server-error.js';
import { isUniqueViolation } from '../../store/tx.js';
import type { Command } from '../unit-of-work.js';
import { getAuthorizerKey, insertAuthorizerKey, setRevoked, type AuthorizerKeyRow } from './queries.js';
import type { AuthorizerKeyView } from './schemas.js';
import { authorizerKeyView } from './views.js';
import { SERVER_LIMITS } from '../../limits.js';

/** POST /authorizer-keys: an Ed25519 SPKI PEM, registered once per tenant. */
export const registerAuthorizerKey: Command<{ name: unknown; public_key_pem: unknown }, AuthorizerKeyView> = async (uow, body) => {
  if (typeof body.name !== 'string' || body.name.length < 1 || body.name.length > 128) {
    throw new ServerError('AUTHORIZER_KEY_INVALID', 'name: must be a string of 1 to 128 characters');
  }
  if (typeof body.public_key_pem !== 'string' || body.public_key_pem.length > SERVER_LIMITS.authorizerKeyPemChars) {
    throw new ServerError('AUTHORIZER_KEY_INVALID', `public_key_pem: must be an SPKI PEM string of at most ${SERVER_LIMITS.authorizerKeyPemChars} characters`);
  }
  let key: PublicKey;
  try {
    key = parsePublicKeyPem(body.public_key_pem);
  } catch (e) {
    throw new ServerError('AUTHORIZER_KEY_INVALID', `public_key_pem: not an SPKI public key PEM (${(e as Error).message})`, { cause: e });
  }
  // spec §1 rule 4: customers authorize releases with Ed25519 only
  if (key.alg !== 'ed25519') throw new ServerError('AUTHORIZER_KEY_INVALID', `public_key_pem: must be an Ed25519 key, got ${key.alg}`);
  let row: AuthorizerKeyRow;
  try {
    row = await insertAuthorizerKey(uow.trx, uow.tenant, { name: body.name, keyid: key.keyid, pem: key.pem }, uow.now);
  } catch (e) {
    if (isUniqueViolation(e)) throw new ServerError('AUTHORIZER_KEY_EXISTS', `public_key_pem: key ${key.keyid} is already registered`);
    throw e;
  }
  await uow.audit({ action: 'authorizer-key.register', target: `authorizer-key:${row.id}`, detail: { keyid: row.keyid, name: row.name } });
  return authorizerKeyView(row);
};

/** POST /authorizer-keys/{id}/revoke, DELETE /authorizer-keys/{id}: kept, marked revoked (the first time is kept). */
export const revokeAuthorizerKey: Command<{ id: string }, AuthorizerKeyView> = async (uow, { id }) => {
  await setRevoked(uow.trx, uow.tenant, id, uow.now);
  const row = await getAuthorizerKey(uow.trx, uow.tenant, id);
  if (!row) throw notFound(`authorizer key ${id}`);
  await uow.audit({ action: 'authorizer-key.revoke', target: `authorizer-key:${row.id}`, detail: { keyid: row.keyid } });
  return authorizerKeyView(row);
};
