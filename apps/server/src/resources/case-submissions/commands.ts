/**
 * Recording a prepared submission and a filing of one. Both lock the case, write one
 * append-only row, recompute the case's nearest deadline (a filing can meet one) and audit
 * `case:<id>` in the same transaction.
 */
import { ServerError } from '../../errors/server-error.js';
import { isUniqueViolation } from '../../store/tx.js';
import { caseOr404, saveCase } from '../cases/commands.js';
import { MEMBER_STATES } from './fields.js';
import type { Delivery } from './transport.js';
import type { PreparedSubmission } from './preparation.js';
import { getSubmission, insertFiling, insertSubmission, supersededBy, type FilingRow, type SubmissionMeta } from './queries.js';
import type { Command, UnitOfWork } from '../unit-of-work.js';
import type { CaseRow } from '../cases/queries.js';

async function lockActiveCase(uow: UnitOfWork, caseId: string): Promise<CaseRow> {
  const c = await caseOr404(uow.trx, uow.tenant, caseId);
  if (c.state !== 'open' && c.state !== 'reportable')
    throw new ServerError('CASE_STATE', `case ${c.id} is ${c.state}: nothing can be submitted or filed (reopen it first)`);
  return c;
}

/** POST /cases/{id}/submissions (after prepareSubmission): the append-only record of the exact document. */
export const recordSubmission: Command<PreparedSubmission, SubmissionMeta> = async (uow, p) => {
  const c = await lockActiveCase(uow, p.caseId);
  if (c.updated_at.getTime() !== p.caseUpdatedAt.getTime()) {
    throw new ServerError('CONFLICT', `case ${c.id} changed while the submission was being prepared: submit it again`);
  }
  if (p.supersedesId !== null) {
    const newer = await supersededBy(uow.trx, uow.tenant, p.supersedesId);
    if (newer !== undefined) throw new ServerError('SUBMISSION_SUPERSEDED', `supersedes_id: submission ${p.supersedesId} is already superseded by ${newer}`);
  }
  let row: SubmissionMeta;
  try {
    row = await insertSubmission(uow.trx, {
      id: p.id,
      tenant_id: uow.tenant,
      case_id: c.id,
      stage: p.stage,
      supersedes_id: p.supersedesId,
      request_id: p.requestId,
      document: p.document,
      digest: p.digest,
      pdf_digest: p.pdfDigest,
      pdf_length: p.pdfLength,
      created_by: p.submittedBy,
      created_at: p.submittedAt,
    });
  } catch (e) {
    // two corrections of the same submission raced: the unique supersedes_id lets one win
    if (isUniqueViolation(e))
      throw new ServerError('SUBMISSION_SUPERSEDED', `supersedes_id: submission ${p.supersedesId} was superseded concurrently`, { cause: e });
    throw e;
  }
  await saveCase(uow, c, {});
  await uow.audit({
    action: 'case.submission-create',
    target: `case:${c.id}`,
    detail: { submission_id: row.id, stage: row.stage, digest: row.digest, pdf_digest: row.pdf_digest, supersedes_id: row.supersedes_id },
  });
  return row;
};

export const RECIPIENTS = ['csirt', 'enisa', 'users'] as const;
export type Recipient = (typeof RECIPIENTS)[number];

export interface FilingInput {
  caseId: string;
  submissionId: string;
  recipients: Recipient[];
  memberState?: string | undefined;
  transport: 'manual' | 'file' | 'webhook';
  filedAt?: string | undefined;
  externalReference?: string | undefined;
  delivery?: Delivery | undefined;
}

/**
 * The recipients of a stage: the CSIRT designated as coordinator (of the Member State of the
 * manufacturer's main establishment, named) and ENISA for the notifications (Art. 14(1)), the
 * users for the advisory (Art. 14(8)).
 */
export function checkRecipients(stage: string, recipients: readonly Recipient[], memberState: string | undefined): void {
  const set = new Set(recipients);
  if (set.size !== recipients.length) throw new ServerError('CASE_INVALID', 'recipients: lists a recipient twice');
  if (stage === 'advisory') {
    if (recipients.length !== 1 || recipients[0] !== 'users') throw new ServerError('CASE_INVALID', 'recipients: the advisory is filed to ["users"]');
  } else if (set.has('users')) throw new ServerError('CASE_INVALID', `recipients: a ${stage} is filed to the CSIRT and ENISA, not to users`);
  if (set.has('csirt') && (memberState === undefined || !(MEMBER_STATES as readonly string[]).includes(memberState))) {
    throw new ServerError(
      'CASE_INVALID',
      `member_state: the Member State of the coordinator CSIRT (main establishment) is required, one of ${MEMBER_STATES.join(', ')}`,
    );
  }
  if (!set.has('csirt') && memberState !== undefined) throw new ServerError('CASE_INVALID', 'member_state: only for a filing to the CSIRT');
}

/** POST /cases/{id}/submissions/{sid}/filings (after the transport delivered, if any): who filed what, when, to whom, and the reference returned. */
export const recordFiling: Command<FilingInput, FilingRow> = async (uow, input) => {
  const c = await lockActiveCase(uow, input.caseId);
  const s = await getSubmission(uow.trx, uow.tenant, c.id, input.submissionId);
  if (!s) throw new ServerError('NOT_FOUND', `submission ${input.submissionId} not found`);
  const newer = await supersededBy(uow.trx, uow.tenant, s.id);
  if (newer !== undefined) throw new ServerError('SUBMISSION_SUPERSEDED', `submission ${s.id} is superseded by ${newer}: file the correction`);
  checkRecipients(s.stage, input.recipients, input.memberState);
  let filedAt = uow.now;
  if (input.filedAt !== undefined) {
    if (input.transport !== 'manual') throw new ServerError('CASE_INVALID', `filed_at: only for a manual filing (the ${input.transport} transport files now)`);
    filedAt = new Date(input.filedAt);
    if (filedAt > uow.now) throw new ServerError('CASE_INVALID', `filed_at: ${filedAt.toISOString()} is in the future (now ${uow.now.toISOString()})`);
    if (filedAt < s.created_at)
      throw new ServerError('CASE_INVALID', `filed_at: ${filedAt.toISOString()} is before the submission was produced (${s.created_at.toISOString()})`);
  }
  const row = await insertFiling(uow.trx, {
    tenant_id: uow.tenant,
    case_id: c.id,
    submission_id: s.id,
    recipients: input.recipients,
    member_state: input.memberState ?? null,
    transport: input.transport,
    external_reference: input.externalReference ?? input.delivery?.reference ?? null,
    delivery: JSON.stringify(input.delivery?.detail ?? {}),
    filed_by: uow.actor.name,
    filed_at: filedAt,
    recorded_at: uow.now,
  });
  await saveCase(uow, c, {});
  await uow.audit({
    action: 'case.submission-file',
    target: `case:${c.id}`,
    detail: {
      submission_id: s.id,
      stage: s.stage,
      digest: s.digest,
      recipients: row.recipients,
      member_state: row.member_state,
      transport: row.transport,
      filed_at: filedAt.toISOString(),
      external_reference: row.external_reference,
    },
  });
  return row;
};
