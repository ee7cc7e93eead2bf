import { isDeepStrictEqual } from 'node:util';
import type { Metadata, Root } from '@tufjs/models';
import type { RepoContext } from './context.js';
import { bumpChain, loadOnlineKeys, mustLatest } from './chain.js';
import { SigningRepoError } from './errors.js';
import { tufExpires } from './expiry.js';
import { generateSigningKey, keyAsNamedBy, signingKeyFromPem, type SigningKey } from './keys.js';
import { buildRoot, decodeRoot, encodeMetadata, signWith } from './metadata.js';
import { insertMetadata, lockRepo, touchRepo, type RepoTx } from './repo-db.js';

export interface RotateRootOptions {
  /**
   * PKCS#8 PEM private keys of the new root role. Omitted: the server generates one
   * new root key and keeps it (as it does for a new repository).
   */
  newRootKeyPems?: string[];
  /** PKCS#8 PEMs of current root keys to sign with. Omitted: the server-held root key. */
  signWith?: string[];
  /** Threshold of the new root role (default 1). */
  threshold?: number;
  /** Keep the (single) new root key on the server. Default: only when the server generated it. */
  keepNewRootKeyOnServer?: boolean;
}

/**
 * Produces root N+1 naming the new root keys, signed by a threshold of the old
 * root keys AND of the new ones, so a TUF client that trusts root N accepts it
 * (TUF client workflow 5.3.4/5.3.5) and then trusts only the new keys.
 */
export async function rotateRoot(ctx: RepoContext, tenantId: string, opts: RotateRootOptions): Promise<{ version: number }> {
  const now = ctx.clock();
  const newKeys = opts.newRootKeyPems === undefined ? [generateSigningKey()] : parseKeys(opts.newRootKeyPems, 'newRootKeyPems');
  const threshold = opts.threshold ?? 1;
  if (!Number.isSafeInteger(threshold) || threshold < 1 || threshold > newKeys.length) {
    throw new SigningRepoError('ROOT_SIGNATURE_INSUFFICIENT', `threshold must be between 1 and ${newKeys.length}`);
  }
  const keep = opts.keepNewRootKeyOnServer ?? opts.newRootKeyPems === undefined;
  if (keep && newKeys.length !== 1) {
    throw new SigningRepoError('KEY_INVALID', 'keepNewRootKeyOnServer needs exactly one new root key');
  }
  let oldKeys: SigningKey[];
  if (opts.signWith !== undefined) {
    oldKeys = parseKeys(opts.signWith, 'signWith');
  } else {
    const held = await ctx.keys.load(tenantId, 'root');
    if (!held) throw new SigningRepoError('ROOT_KEY_UNAVAILABLE', 'the root key is not on the server; pass signWith with the offline root key');
    oldKeys = [held];
  }

  const version = await ctx.db.transaction().execute(async (trx) => {
    if (!(await lockRepo(trx, tenantId))) throw new SigningRepoError('REPO_NOT_FOUND', `tenant ${tenantId} has no signing repository`);
    const current = decodeRoot((await mustLatest(trx, tenantId, 'root')).bytes);
    const online = await loadOnlineKeys(ctx.keys, tenantId, current, trx);
    const next = buildRoot({ version: current.signed.version + 1, now, rootKeys: newKeys, rootThreshold: threshold, online });
    await commitNextRoot(ctx, trx, tenantId, now, current, next, [...oldKeys, ...newKeys]);
    return next.signed.version;
  });

  // The old root key is no longer a root key: never leave it looking like one.
  const [single] = newKeys;
  if (keep && single) await ctx.keys.replace(tenantId, 'root', single);
  else await ctx.keys.remove(tenantId, 'root');
  return { version };
}

/**
 * Signs root `next` with every key of `signers` under the id `current` names it by (what a
 * client trusting `current` looks up) and under the id `next` names it by, checks both
 * thresholds, and inserts it inside the caller's locked transaction. When `next` names an
 * online role's keys by other ids than `current` (the key id rotation), targets, snapshot
 * and timestamp are re-issued in the same transaction, signed under the new ids.
 */
export async function commitNextRoot(
  ctx: RepoContext,
  trx: RepoTx,
  tenantId: string,
  now: Date,
  current: Metadata<Root>,
  next: Metadata<Root>,
  signers: SigningKey[],
): Promise<void> {
  const byId = new Map<string, SigningKey>();
  for (const key of signers) {
    for (const named of [keyAsNamedBy(current.signed, key), keyAsNamedBy(next.signed, key)]) if (named) byId.set(named.keyId, named);
  }
  signWith(next, [...byId.values()]);
  try {
    // TUF 5.3.4: signed by a threshold of the trusted root's keys
    current.verifyDelegate('root', next);
  } catch (e) {
    throw new SigningRepoError(
      'ROOT_SIGNATURE_INSUFFICIENT',
      `the root keys signing (signWith, default the server-held root key) do not meet the threshold of root version ${current.signed.version}`,
      { cause: e },
    );
  }
  try {
    // TUF 5.3.5: and by a threshold of its own keys
    next.verifyDelegate('root', next);
  } catch (e) {
    throw new SigningRepoError(
      'ROOT_SIGNATURE_INSUFFICIENT',
      `the root keys signing do not meet the threshold of the new root version ${next.signed.version}`,
      { cause: e },
    );
  }
  await insertMetadata(trx, tenantId, 'root', next.signed.version, encodeMetadata(next), tufExpires(now, 'root'));
  const renamed = (['targets', 'snapshot', 'timestamp'] as const).some(
    (role) => !isDeepStrictEqual(current.signed.roles[role]?.keyIDs, next.signed.roles[role]?.keyIDs),
  );
  if (renamed) await bumpChain(trx, tenantId, now, await loadOnlineKeys(ctx.keys, tenantId, next, trx), { resignTargets: true, resignSnapshot: true });
  await touchRepo(trx, tenantId);
}

function parseKeys(pems: unknown, field: string): SigningKey[] {
  if (!Array.isArray(pems) || pems.length === 0 || pems.length > 16) {
    throw new SigningRepoError('KEY_INVALID', `${field} must be an array of 1 to 16 PEM private keys`);
  }
  const keys = pems.map((pem, i) => signingKeyFromPem(pem, `${field}[${i}]`));
  if (new Set(keys.map((k) => k.keyId)).size !== keys.length) {
    // thresholds count distinct keys
    throw new SigningRepoError('KEY_INVALID', `${field} lists the same key twice`);
  }
  return keys;
}
