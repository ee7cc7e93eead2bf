import { newSecret } from '../../auth/secrets.js';
import { invalidInput, notFound } from '../../errors/server-error.js';
import type { Command } from '../unit-of-work.js';
import { deleteEnrollToken, insertEnrollToken, type EnrollTokenRecord } from './queries.js';
import { SERVER_LIMITS } from '../../limits.js';

/** A token's life when the operator names none: it is a bearer secret, keep it short-lived. */
export const DEFAULT_TOKEN_TTL_SECONDS = 24 * 3600;

export interface NewEnrollToken {
  name?: string | undefined;
  max_uses?: number | undefined;
  ttl_seconds?: number | undefined;
  /** RFC 3339; in the future and within SERVER_LIMITS.enrollTokenTtlSeconds. */
  expires_at?: string | undefined;
}

/** POST /enroll-tokens: the secret is returned once; only its hash is stored. */
export const createEnrollToken: Command<NewEnrollToken, { token: EnrollTokenRecord; plaintext: string }> = async (uow, input) => {
  if (input.ttl_seconds !== undefined && input.expires_at !== undefined) throw invalidInput('expires_at', 'give expires_at or ttl_seconds, not both');
  let expiresAt = new Date(uow.now.getTime() + (input.ttl_seconds ?? DEFAULT_TOKEN_TTL_SECONDS) * 1000);
  if (input.expires_at !== undefined) {
    expiresAt = new Date(input.expires_at);
    if (Number.isNaN(expiresAt.getTime()) || expiresAt <= uow.now) throw invalidInput('expires_at', 'must be a future RFC 3339 time');
    if (expiresAt.getTime() - uow.now.getTime() > SERVER_LIMITS.enrollTokenTtlSeconds * 1000) throw invalidInput('expires_at', 'must be within 90 days');
  }
  const secret = newSecret('svce');
  const token = await insertEnrollToken(uow.trx, {
    tenantId: uow.tenant,
    name: input.name ?? 'enrollment token',
    prefix: secret.prefix,
    secretHash: secret.hash,
    maxUses: input.max_uses ?? 1,
    expiresAt,
    createdBy: uow.actor.name,
  });
  await uow.audit({
    action: 'enroll-token.create',
    target: `enroll-token:${token.id}`,
    detail: { max_uses: token.max_uses, expires_at: new Date(token.expires_at).toISOString() },
  });
  return { token, plaintext: secret.plaintext };
};

/** DELETE /enroll-tokens/{id}. */
export const removeEnrollToken: Command<{ id: string }, void> = async (uow, { id }) => {
  const token = await deleteEnrollToken(uow.trx, uow.tenant, id);
  if (!token) throw notFound(`enrollment token ${id}`);
  await uow.audit({ action: 'enroll-token.delete', target: `enroll-token:${token.id}` });
};
