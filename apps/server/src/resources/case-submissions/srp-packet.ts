/**
 * The reporting-platform packet of a stage (`svc.enisa-srp-packet.v1`): ENISA's single
 * reporting platform takes Article 14 notifications through a web form and has no submission
 * API, so the service lays out the values of that form, in its order (srp-form.ts), ready to be
 * pasted field by field. The values are read from the case, its latest stage submissions and the
 * fleet (linked findings and exposure) at the moment of preparing; each field says whether the
 * stage requires it and whether it is missing. The packet is recorded with the case like a
 * submission (canonical JSON, digest, audit row in one transaction); its text rendering is a
 * function of the recorded JSON.
 */
import { randomUUID } from 'node:crypto';
import { canonicalize, sha256Digest } from '@svc/release-core';
import { ServerError } from '../../errors/server-error.js';
import type { Db } from '../../store/tx.js';
import { caseOr404 } from '../cases/commands.js';
import type { CaseKind } from '../cases/deadlines.js';
import { linkedEvidence } from '../cases/evidence.js';
import { artifactsByIds, getRelease, listDecisions, listMeasures, tenantName, type CaseRow } from '../cases/queries.js';
import type { SubmissionContent } from './fields.js';
import { brandingSettings, caseSubmissionsWithDocuments, insertPacket, type PacketMeta } from './queries.js';
import { SRP_FORM, srpFields, utc, type PacketSources, type ProductCategory, type SrpSection, type SrpStage } from './srp-form.js';
import type { Command } from '../unit-of-work.js';

export const PACKET_DOCUMENT_TYPE = 'svc.enisa-srp-packet.v1';

export interface PacketField {
  id: string;
  label: string;
  section: SrpSection;
  value: string | null;
  required: boolean;
  /** Required at this stage and without a value. */
  missing: boolean;
}

export interface PacketDocument {
  type: typeof PACKET_DOCUMENT_TYPE;
  id: string;
  form: { name: string; source: string; version: string };
  stage: SrpStage;
  kind: CaseKind;
  case: { id: string; title: string };
  fields: PacketField[];
  missing: { id: string; label: string }[];
  /** The stage submissions the values came from (null: none produced yet), and the fleet's figures. */
  sources: {
    submissions: Record<SrpStage, { id: string; digest: string } | null>;
    findings_total: number;
    devices_total: number;
  };
  prepared_by: string;
  prepared_at: string;
}

interface LatestSubmission {
  id: string;
  digest: string;
  content: SubmissionContent;
}

/** The latest submission of each stage that no correction superseded. */
async function latestSubmissions(db: Db, tenantId: string, caseId: string): Promise<Partial<Record<SrpStage, LatestSubmission>>> {
  const rows = await caseSubmissionsWithDocuments(db, tenantId, caseId);
  const superseded = new Set(rows.map((r) => r.supersedes_id).filter((x) => x !== null));
  const out: Partial<Record<SrpStage, LatestSubmission>> = {};
  for (const r of rows) {
    if (superseded.has(r.id) || !(r.stage === 'early_warning' || r.stage === 'notification' || r.stage === 'final_report')) continue;
    const doc = JSON.parse(Buffer.from(r.document).toString('utf8')) as { content?: SubmissionContent };
    out[r.stage] = { id: r.id, digest: r.digest, content: doc.content ?? {} };
  }
  return out;
}

/** What the packet of `stage` is read from, in one database snapshot (the caller's transaction). */
async function packetSources(db: Db, tenantId: string, c: CaseRow, stage: SrpStage, productCategory: ProductCategory | null) {
  const [artifacts, release, name, branding, measures, decisions, submissions, evidence] = await Promise.all([
    artifactsByIds(db, tenantId, c.artifact_ids),
    c.corrective_release_id === null ? undefined : getRelease(db, tenantId, c.corrective_release_id),
    tenantName(db, tenantId),
    brandingSettings(db, tenantId),
    listMeasures(db, tenantId, c.id),
    listDecisions(db, tenantId, c.id),
    latestSubmissions(db, tenantId, c.id),
    linkedEvidence(db, tenantId, c),
  ]);
  const reportable = decisions.filter((d) => d.decision === 'reportable').at(-1);
  const sources: PacketSources = {
    stage,
    kind: c.kind as CaseKind,
    manufacturer: branding !== undefined && branding.company_name.trim() !== '' ? branding.company_name.trim() : name,
    case: { title: c.title, products: c.products, vulnerability_ids: c.vulnerability_ids, aware_at: c.aware_at, corrective_at: c.corrective_at },
    artifacts: artifacts.map((a) => ({ name: a.name, version: a.version })),
    release: release === undefined ? null : { product: release.product, version: release.version },
    measures: measures.map((m) => ({ description: m.description, available_at: m.available_at })),
    reportableRationale: reportable?.rationale ?? null,
    content: Object.fromEntries(Object.entries(submissions).map(([k, v]) => [k, v.content])),
    productCategory,
    fleet: {
      aliases: [...new Set(evidence.findings.flatMap((f) => [f.vulnerability, ...f.aliases]))],
      findings: evidence.findings.map((f) => ({
        vulnerability: f.vulnerability,
        severity: f.severity,
        cvss_score: f.cvss_score === null ? null : Number(f.cvss_score),
        known_exploited: f.known_exploited,
      })),
      devices: evidence.affected.devices_total,
      groups: evidence.affected.groups.map((g) => g.name),
      fixedBy: [
        ...new Map(evidence.exposure.flatMap((e) => e.fixed_by).map((f) => [`${f.product} ${f.version}`, { product: f.product, version: f.version }])).values(),
      ],
    },
  };
  return { sources, submissions, findingsTotal: evidence.findings_total };
}

/** The packet of `sources.stage`: every field of the form for the stage and kind, in order, with its value and whether it is missing. */
export function packetDocument(
  id: string,
  c: Pick<CaseRow, 'id' | 'title'>,
  sources: PacketSources,
  submissions: Partial<Record<SrpStage, LatestSubmission>>,
  findingsTotal: number,
  preparedBy: string,
  preparedAt: Date,
): PacketDocument {
  const fields = srpFields(sources.stage, sources.kind).map((spec): PacketField => {
    const value = spec.value(sources);
    const required = spec.stages[sources.stage] === 'required';
    return { id: spec.id, label: spec.label, section: spec.section, value, required, missing: required && value === null };
  });
  const ref = (s: LatestSubmission | undefined) => (s === undefined ? null : { id: s.id, digest: s.digest });
  return {
    type: PACKET_DOCUMENT_TYPE,
    id,
    form: { name: SRP_FORM.name, source: SRP_FORM.source, version: SRP_FORM.version },
    stage: sources.stage,
    kind: sources.kind,
    case: { id: c.id, title: c.title },
    fields,
    missing: fields.filter((f) => f.missing).map((f) => ({ id: f.id, label: f.label })),
    sources: {
      submissions: { early_warning: ref(submissions.early_warning), notification: ref(submissions.notification), final_report: ref(submissions.final_report) },
      findings_total: findingsTotal,
      devices_total: sources.fleet.devices,
    },
    prepared_by: preparedBy,
    prepared_at: utc(preparedAt),
  };
}

const STAGE_WORDS: Record<SrpStage, string> = { early_warning: 'Early warning', notification: 'Notification', final_report: 'Final report' };

/**
 * The packet as plain text, in the form's order: a header (form, version, case, digest), the
 * missing required values, then each field as `N. Label [required]` followed by its value
 * (`(no value)` when there is none). A function of the recorded JSON, so the same bytes every time.
 */
export function packetText(doc: PacketDocument, digest: string): string {
  const out = [
    `${doc.form.name}`,
    `${STAGE_WORDS[doc.stage]}, ${doc.kind === 'exploited_vulnerability' ? 'actively exploited vulnerability' : 'severe incident'}`,
    `Case: ${doc.case.title} (${doc.case.id})`,
    `Form fields: version ${doc.form.version} (${doc.form.source})`,
    `Prepared by ${doc.prepared_by} at ${doc.prepared_at}; packet ${doc.id}, ${digest}`,
    '',
    doc.missing.length === 0
      ? 'Every required field has a value.'
      : `Missing required values (${doc.missing.length}): ${doc.missing.map((m) => m.label).join('; ')}`,
  ];
  doc.fields.forEach((f, i) => {
    out.push('', `${i + 1}. ${f.label} [${f.required ? 'required' : 'optional'}]${f.missing ? ' MISSING' : ''}`, f.value ?? '(no value)');
  });
  return `${out.join('\n')}\n`;
}

export interface PacketInput {
  caseId: string;
  stage: SrpStage;
  productCategory?: ProductCategory | undefined;
}

/**
 * POST /cases/{id}/srp-packets: reads the case (locked), its submissions and the fleet in the
 * transaction, records the packet (append-only) and audits `case.packet-create` with it.
 */
export const recordPacket: Command<PacketInput, { meta: PacketMeta; document: PacketDocument }> = async (uow, input) => {
  const c = await caseOr404(uow.trx, uow.tenant, input.caseId);
  if (c.state !== 'open' && c.state !== 'reportable')
    throw new ServerError('CASE_STATE', `case ${c.id} is ${c.state}: no packet can be prepared (reopen it first)`);
  const { sources, submissions, findingsTotal } = await packetSources(uow.trx, uow.tenant, c, input.stage, input.productCategory ?? null);
  const document = packetDocument(randomUUID(), c, sources, submissions, findingsTotal, uow.actor.name, uow.now);
  const bytes = canonicalize(document);
  const digest = sha256Digest(bytes);
  const meta = await insertPacket(uow.trx, {
    id: document.id,
    tenant_id: uow.tenant,
    case_id: c.id,
    stage: input.stage,
    form_version: document.form.version,
    submission_id: submissions[input.stage]?.id ?? null,
    document: bytes,
    digest,
    missing: document.missing.length,
    created_by: uow.actor.name,
    created_at: uow.now,
  });
  await uow.audit({
    action: 'case.packet-create',
    target: `case:${c.id}`,
    detail: {
      packet_id: meta.id,
      stage: meta.stage,
      digest,
      form_version: meta.form_version,
      submission_id: meta.submission_id,
      missing: document.missing.map((m) => m.id),
    },
  });
  return { meta, document };
};
