import type { Role } from '../../auth/permissions.js';
import { newSecret } from '../../auth/secrets.js';
import { notFound } from '../../errors/server-error.js';
import type { Command } from '../unit-of-work.js';
import { insertApiKey, revokeApiKey, type ApiKeyRecord } from './queries.js';

/** POST /api-keys: only the hash is stored; the plaintext is returned once (spec §5 rule 2). */
export const createApiKey: Command<{ name: string; role: Role; createdBy: string | null }, { key: ApiKeyRecord; plaintext: string }> = async (uow, input) => {
  const secret = newSecret('svck');
  const key = await insertApiKey(uow.trx, {
    tenantId: uow.tenant,
    name: input.name,
    role: input.role,
    prefix: secret.prefix,
    keyHash: secret.hash,
    createdBy: input.createdBy,
  });
  await uow.audit({ action: 'api-key.create', target: `api-key:${key.id}`, detail: { name: key.name, role: key.role } });
  return { key, plaintext: secret.plaintext };
};

/** DELETE /api-keys/{id}: revoked at once; an unknown, revoked or other tenant's key is 404. */
export const revokeKey: Command<{ id: string }, void> = async (uow, { id }) => {
  const key = await revokeApiKey(uow.trx, uow.tenant, id, uow.now);
  if (!key) throw notFound(`API key ${id}`);
  await uow.audit({ action: 'api-key.revoke', target: `api-key:${key.id}` });
};
