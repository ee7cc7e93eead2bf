/**
 * The changes of case exports: the record of an export (who exported which case when, and with
 * which key; the export itself writes nothing else), and the evidence keys' records: the first
 * key, and each rotation.
 */
import { ServerError } from '../../errors/server-error.js';
import { caseOr404 } from '../cases/commands.js';
import type { Command } from '../unit-of-work.js';
import type { Db } from '../../store/tx.js';
import { currentEvidenceKey, firstExportWithKey, insertFirstEvidenceKey, rotateEvidenceKeyRows, type EvidenceKeyRow } from './queries.js';

/** The key a change was prepared with is no longer the recorded current one. */
function notCurrent(keyid: string, current: EvidenceKeyRow | undefined): ServerError<'KEY_UNAVAILABLE'> {
  return new ServerError(
    'KEY_UNAVAILABLE',
    `KEY_UNAVAILABLE: evidence key ${keyid} is not the recorded current key (${current === undefined ? 'none is recorded' : `key ${current.seq}, ${current.keyid}`}); retry`,
  );
}

/**
 * GET /cases/{id}/export: audits `case.export` before the archive streams, so the archive's
 * audit slice contains its own export. The signing key is held (FOR SHARE) as the recorded
 * current key, so the export time lies within that key's validity: a rotation waits for it.
 */
export const recordCaseExport: Command<{ caseId: string; keyid: string }, { exportedAt: Date }> = async (uow, { caseId, keyid }) => {
  const c = await caseOr404(uow.trx, uow.tenant, caseId);
  const current = await currentEvidenceKey(uow.trx, uow.tenant, 'share');
  if (current?.keyid !== keyid) throw notCurrent(keyid, current);
  await uow.audit({ action: 'case.export', target: `case:${c.id}`, detail: { keyid } });
  return { exportedAt: uow.now };
};

/**
 * The first use of the evidence key records it as key 1, valid from now, or from the first
 * export it signed when the key predates the records. Audited only when this call recorded it
 * (a concurrent first use of the same file may have won).
 */
export const recordFirstEvidenceKey: Command<{ keyid: string; publicKeyPem: string; store?: (db: Db) => Promise<boolean> }, void> = async (
  uow,
  { keyid, publicKeyPem, store },
) => {
  // a new key is stored here, with its record and audit row; a concurrent first use that stored one first records its own
  if (store !== undefined && !(await store(uow.trx))) return;
  const firstExport = await firstExportWithKey(uow.trx, uow.tenant, keyid);
  const validFrom = firstExport !== undefined && firstExport < uow.now ? firstExport : uow.now;
  if (await insertFirstEvidenceKey(uow.trx, uow.tenant, { keyid, publicKeyPem, validFrom, createdBy: uow.actor.name })) {
    await uow.audit({ action: 'evidence-key.create', target: `evidence-key:${keyid}`, detail: { seq: 1, keyid, valid_from: validFrom.toISOString() } });
  }
};

/**
 * POST /evidence-keys/rotate: the current key's validity ends now and `next` becomes current,
 * its wrapped key stored (`next.store`) in this unit of work. `previousKeyid` is the key the caller saw as current:
 * a concurrent rotation that committed first makes this one KEY_UNAVAILABLE (retry).
 */
export const rotateEvidenceKey: Command<
  { previousKeyid: string; next: { keyid: string; publicKeyPem: string; store: (db: Db) => Promise<void> } },
  EvidenceKeyRow
> = async (uow, { previousKeyid, next }) => {
  const current = await currentEvidenceKey(uow.trx, uow.tenant, 'update');
  if (current?.keyid !== previousKeyid) throw notCurrent(previousKeyid, current);
  // server processes' clocks may disagree: a key's validity never ends before it began
  const validFrom = new Date(current.valid_from);
  const at = uow.now < validFrom ? validFrom : uow.now;
  const row = await rotateEvidenceKeyRows(uow.trx, uow.tenant, current, next, at, uow.actor.name);
  await next.store(uow.trx);
  await uow.audit({
    action: 'evidence-key.rotate',
    target: `evidence-key:${next.keyid}`,
    detail: { seq: row.seq, keyid: next.keyid, previous_seq: current.seq, previous_keyid: current.keyid },
  });
  return row;
};
