/**
 * The steps of a submission that happen before its record: validate the content for the stage
 * and the case's kind, build the exact document (and for the advisory its CSAF 2.0 advisory,
 * schema-checked), draw the branded PDF and store it in the content-addressed blob store. The
 * record and its audit row are inserted afterwards by `recordSubmission`, which refuses if the
 * case changed in between. A crash between the two leaves an unreferenced PDF blob, never a
 * record without its PDF.
 */
import type { Digest } from '@svc/release-core';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { BlobStore } from '../../blobs/index.js';
import { notFound, ServerError } from '../../errors/server-error.js';
import { reportBranding } from '../../reports/pdf.js';
import type { Db } from '../../store/tx.js';
import { caseDeadlines, type CaseKind, type CaseState, type Deadline } from '../cases/deadlines.js';
import { artifactsByIds, deadlineFacts, getCase, getIntermediateRequest, getRelease, releaseArtifacts, tenantName, type CaseRow } from '../cases/queries.js';
import { assertCsaf, buildCsaf } from './csaf.js';
import { submissionDocument, submissionPdf } from './document.js';
import { checkContent, type Stage } from './fields.js';
import { checkRecipients, type Recipient } from './commands.js';
import { brandingSettings, getSubmission, submissionChain, supersededBy } from './queries.js';
import type { EvidenceOptions } from './transport.js';

export interface SubmissionRequest {
  caseId: string;
  stage: Stage;
  content: unknown;
  supersedesId?: string | undefined;
}

export interface PreparedSubmission {
  id: string;
  caseId: string;
  /** The case as the document describes it: the record is refused if it changed since. */
  caseUpdatedAt: Date;
  stage: Stage;
  supersedesId: string | null;
  requestId: string | null;
  document: Uint8Array;
  digest: Digest;
  pdfDigest: Digest;
  pdfLength: number;
  submittedBy: string;
  submittedAt: Date;
}

/** The case a submission or filing is for: 404 when absent, CASE_STATE unless open or reportable. */
export async function activeCase(db: Db, tenantId: string, caseId: string): Promise<CaseRow> {
  const c = await getCase(db, tenantId, caseId);
  if (!c) throw notFound(`case ${caseId}`);
  if (c.state !== 'open' && c.state !== 'reportable')
    throw new ServerError('CASE_STATE', `case ${c.id} is ${c.state}: nothing can be submitted or filed (reopen it first)`);
  return c;
}

function deadlineOf(deadlines: Deadline[], stage: Stage, requestId: string | null): Deadline | null {
  if (stage === 'advisory') return null;
  return deadlines.find((d) => d.obligation === stage && d.request_id === requestId) ?? null;
}

export async function prepareSubmission(
  db: Db,
  blobs: BlobStore,
  tenantId: string,
  actor: string,
  now: Date,
  req: SubmissionRequest,
  evidence: EvidenceOptions | undefined,
): Promise<PreparedSubmission> {
  const c = await activeCase(db, tenantId, req.caseId);
  const kind = c.kind as CaseKind;
  const content = checkContent(req.stage, kind, req.content);
  const requestId = req.stage === 'intermediate' ? String(content.request_id) : null;
  if (requestId !== null && !(await getIntermediateRequest(db, tenantId, c.id, requestId))) {
    throw new ServerError('SUBMISSION_INVALID', `content.request_id: case ${c.id} has no intermediate-report request ${requestId}`);
  }
  let supersedes: { id: string; digest: string } | null = null;
  if (req.supersedesId !== undefined) {
    const previous = await getSubmission(db, tenantId, c.id, req.supersedesId);
    if (!previous) throw new ServerError('SUBMISSION_INVALID', `supersedes_id: case ${c.id} has no submission ${req.supersedesId}`);
    if (previous.stage !== req.stage)
      throw new ServerError('SUBMISSION_INVALID', `supersedes_id: submission ${previous.id} is a ${previous.stage}, not a ${req.stage}`);
    if (previous.request_id !== requestId)
      throw new ServerError('SUBMISSION_INVALID', `content.request_id: the superseded intermediate report answers request ${previous.request_id}`);
    const newer = await supersededBy(db, tenantId, previous.id);
    if (newer !== undefined) throw new ServerError('SUBMISSION_SUPERSEDED', `supersedes_id: submission ${previous.id} is already superseded by ${newer}`);
    supersedes = { id: previous.id, digest: previous.digest };
  }
  const [artifacts, release, name, branding, facts] = await Promise.all([
    artifactsByIds(db, tenantId, c.artifact_ids),
    c.corrective_release_id === null ? undefined : getRelease(db, tenantId, c.corrective_release_id),
    tenantName(db, tenantId),
    brandingSettings(db, tenantId),
    deadlineFacts(db, tenantId, c),
  ]);
  const brand = reportBranding(branding, name, 'Article 14 submission');
  const id = randomUUID();
  let csaf: Record<string, unknown> | undefined;
  if (req.stage === 'advisory') {
    const fixing = release === undefined || c.corrective_at === null ? null : release;
    // CSAF 2.0 6.1.27.4 and 6.1.27.6: a security advisory names the products it is about
    if (kind === 'exploited_vulnerability' && artifacts.length === 0 && fixing === null)
      throw new ServerError(
        'SUBMISSION_INVALID',
        `artifact_ids: case ${c.id} links no artifact and no corrective release: a CSAF security advisory names the affected products (link the artifacts the vulnerability affects first)`,
      );
    const revisions = supersedes === null ? [] : (await submissionChain(db, tenantId, c.id, supersedes.id)).map((s) => ({ at: s.created_at }));
    csaf = buildCsaf({
      caseId: c.id,
      kind,
      publisherName: brand.name || 'Manufacturer',
      content,
      vulnerabilityIds: c.vulnerability_ids,
      artifacts,
      fixingRelease:
        fixing === null || c.corrective_at === null
          ? null
          : {
              id: fixing.id,
              product: fixing.product,
              version: fixing.version,
              availableAt: c.corrective_at,
              artifacts: await releaseArtifacts(db, tenantId, fixing.id),
            },
      revisions,
      baseUrl: evidence?.csafBaseUrl,
      now,
    });
    assertCsaf(csaf);
  }
  const facts_ = {
    id,
    stage: req.stage,
    content,
    manufacturer: { name: brand.name, tenant: tenantId },
    case: {
      id: c.id,
      kind,
      title: c.title,
      products: c.products,
      vulnerability_ids: c.vulnerability_ids,
      aware_at: c.aware_at,
      artifacts: artifacts.map((a) => ({ id: a.id, name: a.name, version: a.version, kind: a.kind, digest: a.digest })),
      corrective_measure:
        c.corrective_at === null
          ? null
          : { available_at: c.corrective_at, release: release === undefined ? null : { id: release.id, product: release.product, version: release.version } },
    },
    deadline: deadlineOf(caseDeadlines({ ...facts, state: c.state as CaseState }, now), req.stage, requestId),
    supersedes,
    submittedBy: actor,
    submittedAt: now,
    ...(csaf === undefined ? {} : { csaf }),
  };
  const doc = submissionDocument(facts_);
  const pdf = await submissionPdf(facts_, doc, brand).bytes();
  const stored = await blobs.put(Readable.from([pdf]));
  return {
    id,
    caseId: c.id,
    caseUpdatedAt: c.updated_at,
    stage: req.stage,
    supersedesId: supersedes?.id ?? null,
    requestId,
    document: doc.bytes,
    digest: doc.digest,
    pdfDigest: stored.digest,
    pdfLength: stored.length,
    submittedBy: actor,
    submittedAt: now,
  };
}

/**
 * The checks of a filing that must pass before a transport delivers anything (the command
 * repeats them under the case lock): the case is active, the submission exists and is not
 * superseded, the recipients fit its stage. Answers the submission to deliver.
 */
export async function prepareFiling(
  db: Db,
  tenantId: string,
  caseId: string,
  submissionId: string,
  recipients: readonly Recipient[],
  memberState: string | undefined,
) {
  const c = await activeCase(db, tenantId, caseId);
  const s = await getSubmission(db, tenantId, c.id, submissionId);
  if (!s) throw notFound(`submission ${submissionId}`);
  const newer = await supersededBy(db, tenantId, s.id);
  if (newer !== undefined) throw new ServerError('SUBMISSION_SUPERSEDED', `submission ${s.id} is superseded by ${newer}: file the correction`);
  checkRecipients(s.stage, recipients, memberState);
  return s;
}
