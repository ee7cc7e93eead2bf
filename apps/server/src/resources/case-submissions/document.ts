/**
 * The exact document of a stage submission (`svc.cra-article14-submission.v1`): what the
 * operator files with the CSIRT and ENISA (through the single reporting platform) or publishes
 * to users. It is RFC 8785 canonical JSON, so its SHA-256 (the submission's digest) is a
 * function of its content; the PDF is the same document drawn with the tenant's branding, and
 * carries these exact bytes as an associated file (PDF/A-3, `AFRelationship /Data`).
 */
import { canonicalize, sha256Digest, type Digest } from '@svc/release-core';
import { BrandedPdf, timeText, type ReportBranding } from '../../reports/pdf.js';
import type { Deadline } from '../cases/deadlines.js';
import { STAGE_FIELDS, STAGE_TITLES, type Stage, type SubmissionContent } from './fields.js';

export const SUBMISSION_DOCUMENT_TYPE = 'svc.cra-article14-submission.v1';

const ARTICLE: Record<Stage, Record<'exploited_vulnerability' | 'severe_incident', string>> = {
  early_warning: { exploited_vulnerability: 'Art. 14(2)(a)', severe_incident: 'Art. 14(4)(a)' },
  notification: { exploited_vulnerability: 'Art. 14(2)(b)', severe_incident: 'Art. 14(4)(b)' },
  intermediate: { exploited_vulnerability: 'Art. 14 (intermediate report on request)', severe_incident: 'Art. 14 (intermediate report on request)' },
  final_report: { exploited_vulnerability: 'Art. 14(2)(c)', severe_incident: 'Art. 14(4)(c)' },
  advisory: { exploited_vulnerability: 'Art. 14(8)', severe_incident: 'Art. 14(8)' },
};

export interface SubmissionFacts {
  id: string;
  stage: Stage;
  content: SubmissionContent;
  manufacturer: { name: string; tenant: string };
  case: {
    id: string;
    kind: 'exploited_vulnerability' | 'severe_incident';
    title: string;
    products: string[];
    vulnerability_ids: string[];
    aware_at: Date;
    artifacts: { id: string; name: string; version: string; kind: string; digest: string }[];
    corrective_measure: { available_at: Date; release: { id: string; product: string; version: string } | null } | null;
  };
  /** The deadline this stage answers (none for the advisory). */
  deadline: Deadline | null;
  supersedes: { id: string; digest: string } | null;
  submittedBy: string;
  submittedAt: Date;
  /** The advisory's CSAF 2.0 document. */
  csaf?: Record<string, unknown>;
}

export interface SubmissionDocument {
  json: Record<string, unknown>;
  bytes: Uint8Array;
  digest: Digest;
}

export function submissionDocument(f: SubmissionFacts): SubmissionDocument {
  const c = f.case;
  const json: Record<string, unknown> = {
    type: SUBMISSION_DOCUMENT_TYPE,
    id: f.id,
    regulation: 'Regulation (EU) 2024/2847 (Cyber Resilience Act)',
    article: ARTICLE[f.stage][c.kind],
    stage: f.stage,
    stage_title: STAGE_TITLES[f.stage],
    manufacturer: f.manufacturer,
    case: {
      id: c.id,
      kind: c.kind,
      title: c.title,
      products: c.products,
      vulnerability_ids: c.vulnerability_ids,
      aware_at: c.aware_at.toISOString(),
      artifacts: c.artifacts,
      corrective_measure:
        c.corrective_measure === null ? null : { available_at: c.corrective_measure.available_at.toISOString(), release: c.corrective_measure.release },
    },
    deadline: f.deadline === null ? null : { obligation: f.deadline.obligation, due_at: f.deadline.due_at?.toISOString() ?? null, basis: f.deadline.basis },
    content: f.content,
    supersedes: f.supersedes,
    submitted_by: f.submittedBy,
    submitted_at: f.submittedAt.toISOString(),
    ...(f.csaf === undefined ? {} : { csaf: f.csaf }),
  };
  const bytes = canonicalize(json);
  return { json, bytes, digest: sha256Digest(bytes) };
}

function show(v: unknown): string {
  if (Array.isArray(v)) return v.length === 0 ? 'none' : v.join(', ');
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  return v === undefined || v === null ? '' : String(v);
}

/** The branded PDF of a submission document: the case, the stage's fields in the table's order, and the document digest. */
export function submissionPdf(f: SubmissionFacts, doc: SubmissionDocument, branding: ReportBranding): BrandedPdf {
  const c = f.case;
  const t = (d: Date) => timeText(d, branding.timeZone);
  const pdf = new BrandedPdf({
    title: `${STAGE_TITLES[f.stage]}: ${c.title}`,
    subtitle: `Regulation (EU) 2024/2847, ${ARTICLE[f.stage][c.kind]}`,
    subject: `Article 14 submission (${SUBMISSION_DOCUMENT_TYPE}); the canonical JSON document is attached`,
    branding,
    generatedAt: f.submittedAt,
    documentId: doc.digest,
  });
  pdf.attach({
    name: `${f.stage}-${f.id}.json`,
    bytes: doc.bytes,
    description: `The submission document (${SUBMISSION_DOCUMENT_TYPE}, RFC 8785 canonical JSON); its SHA-256 is ${doc.digest}`,
    at: f.submittedAt,
  });
  pdf
    .heading('Case')
    .fields([
      ['Case', c.id],
      ['Kind', c.kind === 'exploited_vulnerability' ? 'Actively exploited vulnerability' : 'Severe incident having an impact on the security of the product'],
      ['Manufacturer', f.manufacturer.name],
      ['Products', show(c.products)],
      ['Vulnerabilities', show(c.vulnerability_ids)],
      ['Artifacts', c.artifacts.length === 0 ? 'none' : c.artifacts.map((a) => `${a.name} ${a.version} (${a.digest})`).join('\n')],
      ['Aware since', t(c.aware_at)],
      ...(c.corrective_measure === null
        ? []
        : ([
            [
              'Corrective or mitigating measure available',
              `${t(c.corrective_measure.available_at)}${c.corrective_measure.release === null ? '' : ` (${c.corrective_measure.release.product} ${c.corrective_measure.release.version})`}`,
            ],
          ] as [string, string][])),
    ]);
  if (f.deadline !== null) {
    pdf.fields([['Deadline', `${f.deadline.due_at === null ? 'not yet running' : t(f.deadline.due_at)} (${f.deadline.basis})`]]);
  }
  pdf.heading(STAGE_TITLES[f.stage]).fields(STAGE_FIELDS[f.stage][c.kind].map((s) => [s.label, show(f.content[s.name])] as const));
  pdf.heading('Submission').fields([
    ['Submission', f.id],
    ['Submitted by', f.submittedBy],
    ['Submitted at', t(f.submittedAt)],
    ['Supersedes', f.supersedes === null ? 'none' : `${f.supersedes.id} (${f.supersedes.digest})`],
    ['Document digest (SHA-256 of the canonical JSON)', doc.digest],
  ]);
  return pdf;
}
