/** The record of a case export: who exported which case when (the export itself writes nothing else). */
import { caseOr404 } from '../cases/commands.js';
import type { Command } from '../unit-of-work.js';

/** GET /cases/{id}/export: audits `case.export` before the archive streams, so the archive's audit slice contains its own export. */
export const recordCaseExport: Command<{ caseId: string; keyid: string }, { exportedAt: Date }> = async (uow, { caseId, keyid }) => {
  const c = await caseOr404(uow.trx, uow.tenant, caseId);
  await uow.audit({ action: 'case.export', target: `case:${c.id}`, detail: { keyid } });
  return { exportedAt: uow.now };
};
