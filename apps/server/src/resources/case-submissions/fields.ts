/**
 * The content of each stage submission, per stage and case kind, as Article 14 of Regulation
 * (EU) 2024/2847 asks for it: paragraph 2 for actively exploited vulnerabilities, paragraph 4
 * for severe incidents, paragraph 8 for the information to users. THE table: validation reads
 * it, the PDF prints its labels in its order, and docs/article-14.md lists the same fields
 * (test/resources/case-submissions/submissions.test.ts checks the page against it both ways).
 */
import { isUuid } from '@svc/release-core';
import { ServerError } from '../../errors/server-error.js';
import type { CaseKind } from '../cases/deadlines.js';
import { SERVER_LIMITS } from '../../limits.js';

export const STAGES = ['early_warning', 'notification', 'intermediate', 'final_report', 'advisory'] as const;
export type Stage = (typeof STAGES)[number];

export const STAGE_TITLES: Record<Stage, string> = {
  early_warning: 'Early warning notification',
  notification: 'Notification',
  intermediate: 'Intermediate report',
  final_report: 'Final report',
  advisory: 'Information to users (security advisory)',
};

export type FieldType = 'text' | 'member_states' | 'tlp' | 'boolean' | 'severity' | 'uuid' | 'url';

export interface FieldSpec {
  name: string;
  type: FieldType;
  required: boolean;
  /** PDF label. */
  label: string;
}

/** The EU Member States (ISO 3166-1 alpha-2; Greece is GR). */
export const MEMBER_STATES = [
  'AT',
  'BE',
  'BG',
  'CY',
  'CZ',
  'DE',
  'DK',
  'EE',
  'ES',
  'FI',
  'FR',
  'GR',
  'HR',
  'HU',
  'IE',
  'IT',
  'LT',
  'LU',
  'LV',
  'MT',
  'NL',
  'PL',
  'PT',
  'RO',
  'SE',
  'SI',
  'SK',
] as const;
/** Traffic Light Protocol 2.0 labels: how sensitive the manufacturer considers the information. */
export const TLP_LABELS = ['TLP:CLEAR', 'TLP:GREEN', 'TLP:AMBER', 'TLP:AMBER+STRICT', 'TLP:RED'] as const;
export const SEVERITIES = ['low', 'medium', 'high', 'critical'] as const;

const f = (name: string, type: FieldType, label: string, required = true): FieldSpec => ({ name, type, required, label });
const sensitivity = f('sensitivity', 'tlp', 'Sensitivity of the information (TLP)');
const memberStates = f('member_states', 'member_states', 'Member States where the product is made available');
const userMeasures = f('user_measures', 'text', 'Corrective or mitigating measures users can take');
const correctiveTaken = f('corrective_measures_taken', 'text', 'Corrective or mitigating measures taken');
const productInformation = f('product_information', 'text', 'General information about the product');
const intermediate = [f('request_id', 'uuid', 'Request answered'), f('status_update', 'text', 'Status update'), sensitivity];
// CSAF 2.0 6.1.27.2: an incident response refers to the information published elsewhere, so its URL is required there
const advisory = (informationRequired: boolean) => [
  f('title', 'text', 'Title'),
  f('summary', 'text', 'Summary for users'),
  f('severity', 'severity', 'Severity'),
  userMeasures,
  f('publisher_namespace', 'url', 'Publisher namespace (manufacturer URL)'),
  f('information_url', 'url', 'Further information for users (URL)', informationRequired),
  f('sensitivity', 'tlp', 'Distribution (TLP)', false),
];

export const STAGE_FIELDS: Record<Stage, Record<CaseKind, readonly FieldSpec[]>> = {
  early_warning: {
    exploited_vulnerability: [memberStates, sensitivity],
    severe_incident: [f('suspected_malicious', 'boolean', 'Suspected of being caused by unlawful or malicious acts'), memberStates, sensitivity],
  },
  notification: {
    exploited_vulnerability: [
      productInformation,
      f('vulnerability_nature', 'text', 'General nature of the vulnerability'),
      f('exploit_nature', 'text', 'General nature of the exploit'),
      correctiveTaken,
      userMeasures,
      sensitivity,
    ],
    severe_incident: [
      productInformation,
      f('incident_nature', 'text', 'Nature of the incident'),
      f('initial_assessment', 'text', 'Initial assessment of the incident'),
      correctiveTaken,
      userMeasures,
      sensitivity,
    ],
  },
  intermediate: { exploited_vulnerability: intermediate, severe_incident: intermediate },
  final_report: {
    exploited_vulnerability: [
      f('description', 'text', 'Description of the vulnerability'),
      f('severity', 'severity', 'Severity'),
      f('impact', 'text', 'Impact'),
      f('malicious_actor', 'text', 'Malicious actor that exploited or is exploiting it (where available)', false),
      f('security_update', 'text', 'Security update or other corrective measures made available'),
    ],
    severe_incident: [
      f('description', 'text', 'Detailed description of the incident'),
      f('severity', 'severity', 'Severity'),
      f('impact', 'text', 'Impact'),
      f('root_cause', 'text', 'Type of threat or root cause'),
      f('mitigation_measures', 'text', 'Applied and ongoing mitigation measures'),
    ],
  },
  advisory: { exploited_vulnerability: advisory(false), severe_incident: advisory(true) },
};

export type SubmissionContent = Record<string, string | boolean | string[]>;

function checkValue(spec: FieldSpec, value: unknown): string | undefined {
  switch (spec.type) {
    case 'text':
      if (typeof value !== 'string' || value.trim() === '') return 'must be a non-empty string';
      if (value.length > SERVER_LIMITS.cases.longText) return `must be at most ${SERVER_LIMITS.cases.longText} characters`;
      return undefined;
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be true or false';
    case 'tlp':
      return (TLP_LABELS as readonly unknown[]).includes(value) ? undefined : `must be one of ${TLP_LABELS.join(', ')}`;
    case 'severity':
      return (SEVERITIES as readonly unknown[]).includes(value) ? undefined : `must be one of ${SEVERITIES.join(', ')}`;
    case 'uuid':
      return isUuid(value) ? undefined : 'must be a lower-case UUID';
    case 'url':
      if (typeof value !== 'string' || value.length > 2000) return 'must be an https:// or http:// URL';
      try {
        const u = new URL(value);
        return u.protocol === 'https:' || u.protocol === 'http:' ? undefined : 'must be an https:// or http:// URL';
      } catch {
        return 'must be an https:// or http:// URL';
      }
    case 'member_states': {
      if (!Array.isArray(value)) return `must be an array of Member State codes (${MEMBER_STATES.join(', ')}); empty when none is known`;
      const bad: unknown = value.find((v: unknown) => !(MEMBER_STATES as readonly unknown[]).includes(v));
      if (bad !== undefined) return `${JSON.stringify(bad)} is not a Member State code (${MEMBER_STATES.join(', ')})`;
      if (new Set(value).size !== value.length) return 'lists a Member State twice';
      return undefined;
    }
  }
}

/**
 * The content of a `stage` submission for a case of `kind`, checked against the table: every
 * problem at once (missing required fields, unknown fields, bad values), each naming
 * `content.<field>`, as one SUBMISSION_INVALID.
 */
export function checkContent(stage: Stage, kind: CaseKind, content: unknown): SubmissionContent {
  if (typeof content !== 'object' || content === null || Array.isArray(content)) throw new ServerError('SUBMISSION_INVALID', 'content: must be an object');
  const specs = STAGE_FIELDS[stage][kind];
  const issues: string[] = [];
  const out: SubmissionContent = {};
  const given = content as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (!specs.some((s) => s.name === key)) issues.push(`content.${key}: not a field of ${stage} for ${kind}`);
  }
  for (const spec of specs) {
    const value = given[spec.name];
    if (value === undefined || value === null) {
      if (spec.required) issues.push(`content.${spec.name}: is required for ${stage} of ${kind}`);
      continue;
    }
    const problem = checkValue(spec, value);
    if (problem !== undefined) issues.push(`content.${spec.name}: ${problem}`);
    else out[spec.name] = value as string | boolean | string[];
  }
  if (issues.length > 0) throw new ServerError('SUBMISSION_INVALID', issues.join('; '));
  return out;
}
