/**
 * Trusted authorizer keys (spec 4 prerequisites: "the Ed25519 public key is registered as a
 * trusted authorizer key"). Revocation keeps the row (evidence of what was trusted when) and
 * removes the key from every later verification: release submission and rollout start.
 */
import { parsePublicKeyPem, type PublicKey } from '@svc/release-core';
import { isUniqueViolation, type Db } from '../store/tx.js';
import { isUuid } from '../resources/ids.js';
import { ServerError } from '../errors/server-error.js';

const MAX_PEM = 4096;

export interface AuthorizerKeyView {
  id: string;
  name: string;
  keyid: string;
  public_key_pem: string;
  created_at: string;
  revoked_at: string | null;
  status: 'active' | 'revoked';
}

function view(r: { id: string; name: string; keyid: string; public_key_pem: string; created_at: Date; revoked_at: Date | null }): AuthorizerKeyView {
  return {
    id: r.id,
    name: r.name,
    keyid: r.keyid,
    public_key_pem: r.public_key_pem,
    created_at: r.created_at.toISOString(),
    revoked_at: r.revoked_at ? r.revoked_at.toISOString() : null,
    status: r.revoked_at ? 'revoked' : 'active',
  };
}

export async function registerAuthorizerKey(db: Db, tenantId: string, body: { name: unknown; public_key_pem: unknown }, now: Date): Promise<AuthorizerKeyView> {
  if (typeof body.name !== 'string' || body.name.length < 1 || body.name.length > 128) {
    throw new ServerError('AUTHORIZER_KEY_INVALID', 'name: must be a string of 1 to 128 characters');
  }
  if (typeof body.public_key_pem !== 'string' || body.public_key_pem.length > MAX_PEM) {
    throw new ServerError('AUTHORIZER_KEY_INVALID', `public_key_pem: must be an SPKI PEM string of at most ${MAX_PEM} characters`);
  }
  let key: PublicKey;
  try {
    key = parsePublicKeyPem(body.public_key_pem);
  } catch (e) {
    throw new ServerError('AUTHORIZER_KEY_INVALID', `public_key_pem: not an SPKI public key PEM (${(e as Error).message})`, { cause: e });
  }
  // spec 1.4: customers authorize releases with Ed25519 only
  if (key.alg !== 'ed25519') throw new ServerError('AUTHORIZER_KEY_INVALID', `public_key_pem: must be an Ed25519 key, got ${key.alg}`);
  try {
    const row = await db
      .insertInto('authorizer_keys')
      .values({ tenant_id: tenantId, name: body.name, keyid: key.keyid, public_key_pem: key.pem, created_at: now, revoked_at: null })
      .returningAll()
      .executeTakeFirstOrThrow();
    return view(row);
  } catch (e) {
    if (isUniqueViolation(e)) throw new ServerError('AUTHORIZER_KEY_EXISTS', `public_key_pem: key ${key.keyid} is already registered`);
    throw e;
  }
}

export async function listAuthorizerKeys(db: Db, tenantId: string, limit: number, offset: number): Promise<{ keys: AuthorizerKeyView[]; total: number; counts: { active: number; revoked: number } }> {
  const rows = await db.selectFrom('authorizer_keys').selectAll().where('tenant_id', '=', tenantId).orderBy('created_at').orderBy('id').limit(limit).offset(offset).execute();
  const c = await db
    .selectFrom('authorizer_keys')
    .select((eb) => [eb.fn.countAll<string>().as('total'), eb.fn.count<string>('revoked_at').as('revoked')])
    .where('tenant_id', '=', tenantId)
    .executeTakeFirstOrThrow();
  const total = Number(c.total);
  const revoked = Number(c.revoked);
  return { keys: rows.map(view), total, counts: { active: total - revoked, revoked } };
}

export async function getAuthorizerKey(db: Db, tenantId: string, id: string): Promise<AuthorizerKeyView | undefined> {
  if (!isUuid(id)) return undefined;
  const r = await db.selectFrom('authorizer_keys').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
  return r ? view(r) : undefined;
}

/** Marks the key revoked (idempotent: the first revocation time is kept). */
export async function revokeAuthorizerKey(db: Db, tenantId: string, id: string, now: Date): Promise<AuthorizerKeyView> {
  if (!isUuid(id)) throw new ServerError('NOT_FOUND', `authorizer key ${id} not found`);
  await db.updateTable('authorizer_keys').set({ revoked_at: now }).where('tenant_id', '=', tenantId).where('id', '=', id).where('revoked_at', 'is', null).execute();
  const r = await getAuthorizerKey(db, tenantId, id);
  if (!r) throw new ServerError('NOT_FOUND', `authorizer key ${id} not found`);
  return r;
}

/** The keys a release may be verified against right now: registered and not revoked. */
export async function trustedAuthorizerKeys(db: Db, tenantId: string): Promise<PublicKey[]> {
  const rows = await db.selectFrom('authorizer_keys').select('public_key_pem').where('tenant_id', '=', tenantId).where('revoked_at', 'is', null).execute();
  return rows.map((r) => parsePublicKeyPem(r.public_key_pem));
}
