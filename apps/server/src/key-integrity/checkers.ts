import type { Kysely } from 'kysely';
import { deviceCaKeyRef, inspectCaKey, SERVER_CA_KEY_REF } from '../device-channel/ca-key.js';
import { keyIdOfRef, type WrappedKeys } from '../key-custody/wrapped-keys.js';
import { DeviceCaStore, deviceCaKeyLabel } from '../device-channel/device-ca.js';
import { readServerCa } from '../device-channel/server-tls.js';
import { anyDeviceCa, currentDeviceCas } from '../resources/device-ca/queries.js';
import { inspectEvidenceKey, rotateEvidenceKeyFile } from '../resources/case-exports/evidence-key.js';
import { rotateEvidenceKey } from '../resources/case-exports/commands.js';
import { runUnitOfWork, systemActor } from '../resources/unit-of-work.js';
import { allCurrentEvidenceKeys } from '../resources/case-exports/queries.js';
import type { SigningRepository } from '../signing-repo/repository.js';
import type { Database } from '../store/database.js';
import { KEY_DOC, type KeyChecker, type KeyReport } from './key-check.js';

/**
 * TUF role keys of every tenant repository against the keys its current root names. A
 * missing root key is legitimate (offline custody); a lost online key can be replaced by a
 * root update the server-held root key signs (SVC_KEY_RECOVERY=tuf-online-rotate).
 */
export function tufRoleKeysChecker(repo: SigningRepository): KeyChecker {
  return {
    name: 'tuf-role-keys',
    async check() {
      const found = await repo.inspectRoleKeys();
      const rootHeld = new Set(found.filter((r) => r.role === 'root' && r.state === 'ok').map((r) => r.tenantId));
      return found.map((r): KeyReport => {
        const key = `TUF ${r.role} key of tenant ${r.tenantId}`;
        if (r.state === 'ok') return { key, tenantId: r.tenantId, state: 'ok' };
        if (r.state === 'absent') return { key, tenantId: r.tenantId, state: 'absent', note: 'offline custody' };
        const remedy =
          r.role === 'root'
            ? `restore the wrapped key (database backup) or the KEK, or remove it if the root key is in offline custody; see ${KEY_DOC}`
            : rootHeld.has(r.tenantId)
              ? `restore the wrapped key (database backup) or the KEK, or start once with SVC_KEY_RECOVERY=tuf-online-rotate to replace it through a root update; see ${KEY_DOC}`
              : `restore the wrapped key (database backup) or the KEK; the TUF root key is not on the server, so SVC_KEY_RECOVERY=tuf-online-rotate cannot sign a new root: see ${KEY_DOC}`;
        return { key, tenantId: r.tenantId, state: r.state, ...(r.problem !== undefined ? { problem: r.problem } : {}), remedy };
      });
    },
    recovery: {
      mode: 'tuf-online-rotate',
      async run(failed) {
        const done: string[] = [];
        for (const tenantId of new Set(failed.map((r) => r.tenantId))) {
          if (tenantId === undefined) continue;
          try {
            const rotated = await repo.rotateLostOnlineKeys(tenantId);
            if (rotated) done.push(`TUF online keys rotated: tenant ${tenantId}, roles ${rotated.roles.join(', ')}, root version ${rotated.rootVersion}`);
          } catch (e) {
            // the check that follows still fails and names the key; this line says why no rotation happened
            done.push(`TUF online keys of tenant ${tenantId} not rotated: ${e instanceof Error ? e.message : String(e)}`);
          }
        }
        return done;
      },
    },
  };
}

/**
 * Each tenant's current device CA key (the wrapped key its `device_cas` row names) against the CA
 * certificate stored there; a retired CA needs no key. The recovery
 * (SVC_KEY_RECOVERY=device-ca-rotate) replaces a failing CA by a new one and keeps the old
 * certificate trusted for verification until the last certificate it issued expires
 * (docs/device-channel.md "Device CA rotation").
 */
export function deviceCaKeysChecker(db: Kysely<Database>, keys: WrappedKeys, clock: () => Date = () => new Date()): KeyChecker {
  const store = new DeviceCaStore(db, keys);
  return {
    name: 'device-ca-keys',
    async check() {
      const out: KeyReport[] = [];
      for (const ca of await currentDeviceCas(db)) {
        const key = deviceCaKeyLabel(ca.tenantId);
        const found = await inspectCaKey(key, ca.certDer, keys, deviceCaKeyRef(ca.tenantId, ca.keyFile));
        out.push(
          found.state === 'ok'
            ? { key, tenantId: ca.tenantId, state: 'ok' }
            : {
                key,
                tenantId: ca.tenantId,
                state: found.state,
                problem: found.problem,
                remedy: `restore the wrapped key (database backup) or the KEK, or start once with SVC_KEY_RECOVERY=device-ca-rotate to replace the CA (the old one stays trusted until its certificates expire; devices move to the new one as they renew): see ${KEY_DOC}`,
              },
        );
      }
      return out;
    },
    recovery: {
      mode: 'device-ca-rotate',
      async run(failed) {
        const done: string[] = [];
        for (const tenantId of new Set(failed.map((r) => r.tenantId))) {
          if (tenantId === undefined) continue;
          try {
            const r = await store.rotate(tenantId, clock(), systemActor('key-recovery'));
            done.push(
              `device CA rotated: tenant ${tenantId}, CA ${r.previous.seq} retired (trusted until ${r.previous.trustedUntil.toISOString()}), CA ${r.current.seq} current`,
            );
          } catch (e) {
            done.push(`device CA of tenant ${tenantId} not rotated: ${e instanceof Error ? e.message : String(e)}`);
          }
        }
        return done;
      },
    },
  };
}

/**
 * The server CA devices pin at enrollment (`server/server-ca` in `wrapped_keys`, certificate
 * beside the key): expected once a device CA exists (a device may have enrolled); before that
 * the device channel creates it at its first start.
 */
export function serverCaKeyChecker(db: Kysely<Database>, keys: WrappedKeys): KeyChecker {
  return {
    name: 'server-ca-key',
    async check() {
      const key = 'server CA key';
      const remedy = `restore the wrapped key (database backup) or the KEK; without them, replace the server CA: see ${KEY_DOC}`;
      const where = `wrapped key ${keyIdOfRef(SERVER_CA_KEY_REF)}`;
      let ca;
      try {
        ca = await readServerCa(keys);
      } catch (e) {
        return [{ key, state: 'unreadable', problem: `server CA key is unreadable (${where}: ${e instanceof Error ? e.message : String(e)})`, remedy }];
      }
      if (ca === undefined) {
        if (!(await anyDeviceCa(db))) return [{ key, state: 'absent', note: 'created when the device channel first starts' }];
        return [{ key, state: 'missing', problem: `server CA key is missing (${where}) while devices may have pinned its certificate`, remedy }];
      }
      const found = await inspectCaKey(key, ca.certDer, keys, SERVER_CA_KEY_REF);
      return [found.state === 'ok' ? { key, state: 'ok' } : { key, state: found.state, problem: found.problem, remedy }];
    },
  };
}

/**
 * Each tenant's current evidence key (the `evidence_keys` row without `valid_until`) against its
 * wrapped key. A tenant that never exported has no recorded key yet: nothing to check. An interrupted
 * rotation's imported pending key is moved into place here, as at the next export. The recovery
 * (SVC_KEY_RECOVERY=evidence-rotate) is the audited rotation the API does: the lost key stays
 * published for the exports it signed, and a new key signs from now on.
 */
export function evidenceKeysChecker(db: Kysely<Database>, keys: WrappedKeys): KeyChecker {
  return {
    name: 'evidence-keys',
    async check() {
      const out: KeyReport[] = [];
      for (const row of await allCurrentEvidenceKeys(db)) {
        const key = `evidence key ${row.seq} (${row.keyid}) of tenant ${row.tenant_id}`;
        const found = await inspectEvidenceKey(keys, row.tenant_id, row);
        out.push(
          found.state === 'ok'
            ? { key, tenantId: row.tenant_id, state: 'ok' }
            : {
                key,
                tenantId: row.tenant_id,
                state: found.state,
                problem: found.problem,
                remedy: `restore the wrapped key (database backup) or the KEK, or start once with SVC_KEY_RECOVERY=evidence-rotate to retire it (its exports still verify against GET /api/v1/evidence-keys) and sign with a new one: see ${KEY_DOC}`,
              },
        );
      }
      return out;
    },
    recovery: {
      mode: 'evidence-rotate',
      async run(failed) {
        const done: string[] = [];
        for (const row of await allCurrentEvidenceKeys(db)) {
          if (!failed.some((r) => r.tenantId === row.tenant_id)) continue;
          try {
            const scope = { tenant: row.tenant_id, actor: systemActor('key-recovery'), now: new Date() };
            const rotated = await rotateEvidenceKeyFile(keys, row.tenant_id, (next) =>
              runUnitOfWork(db, scope, (uow) => rotateEvidenceKey(uow, { previousKeyid: row.keyid, next })),
            );
            done.push(`evidence key rotated: tenant ${row.tenant_id}, key ${row.seq} (${row.keyid}) retired, key ${rotated.seq} (${rotated.keyid}) current`);
          } catch (e) {
            done.push(`evidence key of tenant ${row.tenant_id} not rotated: ${e instanceof Error ? e.message : String(e)}`);
          }
        }
        return done;
      },
    },
  };
}

/** Every checker, in the order failures are reported. One more kind of key is one more entry. */
export function keyCheckers(o: { db: Kysely<Database>; signingRepo: SigningRepository }): KeyChecker[] {
  const keys = o.signingRepo.wrappedKeys;
  return [tufRoleKeysChecker(o.signingRepo), deviceCaKeysChecker(o.db, keys), serverCaKeyChecker(o.db, keys), evidenceKeysChecker(o.db, keys)];
}
