import type { Kysely } from 'kysely';
import { runUnitOfWork, systemActor } from '../resources/unit-of-work.js';
import type { Database } from '../store/database.js';
import { KekError, type Kek } from './kek.js';
import { allWrappedKeys, rewrapKey } from './queries.js';

export interface RewrapResult {
  /** Keys moved to the new KEK by this call. */
  rewrapped: number;
  /** Keys that were under the new KEK already (a rewrap run again after a failure). */
  already: number;
}

/**
 * Moves every wrapped key from `from` to `to` in one transaction (`node dist/main.js
 * rewrap-keys`): each key is unwrapped with the old KEK, wrapped with the new one, and
 * unwrapped again with the new one and compared before its row changes; each tenant whose
 * keys moved gets one `keys.rewrap` audit row in the same transaction. Nothing changes unless
 * every key moves: after the commit the old KEK opens nothing. A key under a third KEK stops it.
 */
export async function rewrapAllKeys(db: Kysely<Database>, from: Kek, to: Kek, now: Date = new Date()): Promise<RewrapResult> {
  if (from.id === to.id) throw new KekError(`the new KEK is the current one (${to.id}); nothing to rewrap`);
  return db.transaction().execute(async (trx) => {
    const result: RewrapResult = { rewrapped: 0, already: 0 };
    const perTenant = new Map<string, number>();
    for (const row of await allWrappedKeys(trx, true)) {
      if (row.kek_id === to.id) {
        result.already += 1;
        continue;
      }
      if (row.kek_id !== from.id)
        throw new KekError(`wrapped key ${row.key_id} is wrapped by KEK ${row.kek_id}, neither the current KEK ${from.id} nor the new ${to.id}`);
      const aad = Buffer.from(row.key_id);
      const plain = await from.unwrap(Buffer.from(row.wrapped), aad);
      try {
        const wrapped = await to.wrap(plain, aad);
        const check = await to.unwrap(wrapped, aad);
        const same = check.equals(plain);
        check.fill(0);
        if (!same) throw new KekError(`the new KEK ${to.id} does not give back wrapped key ${row.key_id}`);
        await rewrapKey(trx, row.key_id, { wrapAlg: to.algorithm, kekId: to.id, wrapped }, now);
      } finally {
        plain.fill(0);
      }
      result.rewrapped += 1;
      if (row.tenant_id !== null) perTenant.set(row.tenant_id, (perTenant.get(row.tenant_id) ?? 0) + 1);
    }
    for (const [tenant, keys] of perTenant) {
      await runUnitOfWork(trx, { tenant, actor: systemActor('rewrap-keys'), now }, (uow) =>
        uow.audit({ action: 'keys.rewrap', target: `kek:${to.id}`, detail: { keys, from_kek: from.id, to_kek: to.id, wrap_alg: to.algorithm } }),
      );
    }
    return result;
  });
}
