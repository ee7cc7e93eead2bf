/**
 * THE field list of the reporting-platform packet: the fields of ENISA's single reporting
 * platform (SRP) form for an Article 14 notification, in the form's order, per stage and case
 * kind, each with whether that stage requires it and where its value comes from. The packet
 * (srp-packet.ts), its text rendering, the console's view and docs/article-14.md all follow this
 * one table (test/resources/case-submissions/srp-packet.test.ts checks the page against it both ways).
 *
 * Source: the text of Regulation (EU) 2024/2847, Article 14(2) (actively exploited
 * vulnerability), 14(4) (severe incident) and 14(6) (when an incident is severe), and the
 * platform's form as ENISA has described it publicly; ENISA has not published a field list of
 * the form. When the form differs or changes, edit the rows here and raise `SRP_FORM.version`:
 * every packet records the version it followed, so packets prepared before stay readable.
 */
import type { CaseKind } from '../cases/deadlines.js';
import type { SubmissionContent } from './fields.js';

export const SRP_STAGES = ['early_warning', 'notification', 'final_report'] as const;
export type SrpStage = (typeof SRP_STAGES)[number];

/** The CRA's product categories (Article 7 and Annex III, Article 8 and Annex IV), as the form asks for them. */
export const PRODUCT_CATEGORIES = {
  default: 'Default category (not listed in Annex III or IV)',
  important_class_i: 'Important product, class I (Annex III)',
  important_class_ii: 'Important product, class II (Annex III)',
  critical: 'Critical product (Annex IV)',
} as const;
export type ProductCategory = keyof typeof PRODUCT_CATEGORIES;

/** What a packet's values are read from: the case, its latest stage submissions, and the fleet at the moment of preparing it. */
export interface PacketSources {
  stage: SrpStage;
  kind: CaseKind;
  /** The report branding's company name, else the tenant's name. */
  manufacturer: string;
  case: { title: string; products: string[]; vulnerability_ids: string[]; aware_at: Date; corrective_at: Date | null };
  artifacts: { name: string; version: string }[];
  /** The release of the corrective measure, when one is linked. */
  release: { product: string; version: string } | null;
  /** Recorded corrective measures, oldest first. */
  measures: { description: string; available_at: Date }[];
  /** The rationale of the latest `reportable` assessment. */
  reportableRationale: string | null;
  /** The content of the latest submission (not superseded) of each stage. */
  content: Partial<Record<SrpStage, SubmissionContent>>;
  /** Given with the request (values the case does not record). */
  productCategory: ProductCategory | null;
  fleet: {
    /** Every id the linked findings name (aliases included). */
    aliases: string[];
    /** Linked findings, known exploited and most severe first. */
    findings: { vulnerability: string; severity: string | null; cvss_score: number | null; known_exploited: boolean }[];
    /** Devices running an affected artifact or one the case names, and their groups. */
    devices: number;
    groups: string[];
    /** The newest release fixing each linked vulnerability, per product. */
    fixedBy: { product: string; version: string }[];
  };
}

export type Requirement = 'required' | 'optional';
export type SrpSection = 'common' | 'vulnerability' | 'incident';

export interface SrpField {
  id: string;
  label: string;
  /** `common` for both kinds; `vulnerability` for an actively exploited vulnerability; `incident` for a severe incident. */
  section: SrpSection;
  /** The stages whose form shows the field, and whether it must be filled there. */
  stages: Partial<Record<SrpStage, Requirement>>;
  /** Where the field is asked for. */
  basis: string;
  /** Where its value comes from (docs/article-14.md prints it). */
  from: string;
  /** The value, or null when the case, its submissions and the fleet do not know it. */
  value(s: PacketSources): string | null;
}

const R = 'required';
const O = 'optional';
const EVERY = { early_warning: R, notification: R, final_report: R } as const;

/** `2026-10-01T11:00:00Z`: UTC, to the second. */
export function utc(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const lines = (...parts: (string | null | undefined)[]): string | null => {
  const kept = parts.filter((p): p is string => typeof p === 'string' && p.trim() !== '');
  return kept.length === 0 ? null : kept.join('\n');
};
const text = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null);
const yesNo = (v: unknown): string | null => (typeof v === 'boolean' ? (v ? 'Yes' : 'No') : null);
/** A field of the stage's own submission. */
const own = (s: PacketSources, name: string): unknown => s.content[s.stage]?.[name];
/** A field of the latest stage that has it: this stage first, then the earlier ones. */
const latest = (s: PacketSources, name: string): unknown => {
  const order = SRP_STAGES.slice(0, SRP_STAGES.indexOf(s.stage) + 1).reverse();
  for (const stage of order) {
    const v = s.content[stage]?.[name];
    if (v !== undefined) return v;
  }
  return undefined;
};
const memberStates = (s: PacketSources): string[] | undefined => {
  const v = latest(s, 'member_states');
  return Array.isArray(v) ? v.map(String) : undefined;
};
const ids = (s: PacketSources, test: (id: string) => boolean): string | null => {
  const all = [...new Set([...s.case.vulnerability_ids, ...s.fleet.aliases])].filter(test).sort();
  return all.length === 0 ? null : all.join(', ');
};
const CVE = /^CVE-\d{4}-\d+$/;
const EUVD = /^EUVD-\d{4}-\d+$/;
const fleetExposure = (s: PacketSources): string | null =>
  s.fleet.devices === 0
    ? null
    : `Fleet: ${plural(s.fleet.devices, 'device')}${s.fleet.groups.length === 0 ? '' : ` in ${plural(s.fleet.groups.length, 'group')} (${s.fleet.groups.join(', ')})`} run an affected version.`;
const fleetSeverity = (s: PacketSources): string | null => {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const f of s.fleet.findings) {
    if (seen.has(f.vulnerability) || out.length === 10) continue;
    seen.add(f.vulnerability);
    const score = f.cvss_score === null ? '' : ` (CVSS ${f.cvss_score})`;
    out.push(`${f.vulnerability}: ${f.severity ?? 'severity not rated'}${score}${f.known_exploited ? ', known exploited' : ''}`);
  }
  return out.length === 0 ? null : `Vulnerability feeds: ${out.join('; ')}.`;
};
const recordedMeasures = (s: PacketSources): string | null =>
  s.measures.length === 0 ? null : s.measures.map((m) => `Recorded measure, available since ${utc(m.available_at)}: ${m.description}`).join('\n');

const KIND_WORDS: Record<CaseKind, string> = {
  exploited_vulnerability: 'Actively exploited vulnerability (CRA Art. 14(1))',
  severe_incident: 'Severe incident having an impact on the security of the product (CRA Art. 14(3))',
};
const STAGE_WORDS: Record<SrpStage, Record<CaseKind, string>> = {
  early_warning: { exploited_vulnerability: 'Early warning (Art. 14(2)(a))', severe_incident: 'Early warning (Art. 14(4)(a))' },
  notification: { exploited_vulnerability: 'Vulnerability notification (Art. 14(2)(b))', severe_incident: 'Incident notification (Art. 14(4)(b))' },
  final_report: { exploited_vulnerability: 'Final report (Art. 14(2)(c))', severe_incident: 'Final report (Art. 14(4)(c))' },
};

const FIELDS: readonly SrpField[] = [
  // common: the notification, the manufacturer and the product
  {
    id: 'notification_type',
    label: 'Notification type',
    section: 'common',
    stages: EVERY,
    basis: 'Art. 14(1), 14(3)',
    from: 'the case kind',
    value: (s) => KIND_WORDS[s.kind],
  },
  {
    id: 'notification_stage',
    label: 'Notification stage',
    section: 'common',
    stages: EVERY,
    basis: 'Art. 14(2), 14(4)',
    from: 'the stage of the packet',
    value: (s) => STAGE_WORDS[s.stage][s.kind],
  },
  {
    id: 'manufacturer',
    label: 'Manufacturer',
    section: 'common',
    stages: EVERY,
    basis: 'SRP form',
    from: "the report branding's company name, else the tenant's name",
    value: (s) => text(s.manufacturer),
  },
  {
    id: 'product',
    label: 'Product with digital elements',
    section: 'common',
    stages: EVERY,
    basis: 'SRP form',
    from: "the case's products and linked artifacts (name and version)",
    value: (s) =>
      lines(
        s.case.products.length === 0 ? null : s.case.products.join(', '),
        s.artifacts.length === 0 ? null : `Versions: ${s.artifacts.map((a) => `${a.name} ${a.version}`).join(', ')}`,
      ),
  },
  {
    id: 'product_information',
    label: 'General information about the product',
    section: 'common',
    stages: { notification: R },
    basis: 'Art. 14(2)(b)',
    from: "the notification's `product_information`",
    value: (s) => text(own(s, 'product_information')),
  },
  {
    id: 'product_category',
    label: 'Product category',
    section: 'common',
    stages: { early_warning: O, notification: O, final_report: O },
    basis: 'SRP form',
    from: 'given when the packet is prepared (`product_category`)',
    value: (s) => (s.productCategory === null ? null : PRODUCT_CATEGORIES[s.productCategory]),
  },
  {
    id: 'member_states',
    label: 'Member States where the product is made available',
    section: 'common',
    stages: { early_warning: R, notification: O, final_report: O },
    basis: 'Art. 14(2)(a), 14(4)(a)',
    from: "the latest stage submission's `member_states` (none known: said so)",
    value: (s) => {
      const ms = memberStates(s);
      if (ms === undefined) return null;
      return ms.length === 0 ? 'None known' : ms.join(', ');
    },
  },
  {
    id: 'title',
    label: 'Title',
    section: 'common',
    stages: EVERY,
    basis: 'SRP form',
    from: 'the case title',
    value: (s) => text(s.case.title),
  },
  {
    id: 'aware_at',
    label: 'Manufacturer became aware (UTC)',
    section: 'common',
    stages: EVERY,
    basis: 'Art. 14(2)(a), 14(4)(a): the clocks run from it',
    from: "the case's awareness record in force",
    value: (s) => utc(s.case.aware_at),
  },
  // an actively exploited vulnerability (Art. 14(2))
  {
    id: 'cve_ids',
    label: 'CVE identifiers',
    section: 'vulnerability',
    stages: { early_warning: O, notification: O, final_report: O },
    basis: 'SRP form',
    from: "the case's vulnerability ids and the aliases of its linked findings",
    value: (s) => ids(s, (id) => CVE.test(id)),
  },
  {
    id: 'euvd_ids',
    label: 'EUVD identifiers (European Vulnerability Database)',
    section: 'vulnerability',
    stages: { early_warning: O, notification: O, final_report: O },
    basis: 'SRP form, Art. 16',
    from: "the case's vulnerability ids and the aliases of its linked findings",
    value: (s) => ids(s, (id) => EUVD.test(id)),
  },
  {
    id: 'other_ids',
    label: 'Other vulnerability identifiers',
    section: 'vulnerability',
    stages: { early_warning: O, notification: O, final_report: O },
    basis: 'SRP form',
    from: 'GHSA and other OSV ids of the case and its linked findings',
    value: (s) => ids(s, (id) => !CVE.test(id) && !EUVD.test(id)),
  },
  {
    id: 'vulnerability_nature',
    label: 'General nature of the vulnerability',
    section: 'vulnerability',
    stages: { notification: R },
    basis: 'Art. 14(2)(b)',
    from: "the notification's `vulnerability_nature`",
    value: (s) => text(own(s, 'vulnerability_nature')),
  },
  {
    id: 'exploit_nature',
    label: 'General nature of the exploit',
    section: 'vulnerability',
    stages: { notification: R },
    basis: 'Art. 14(2)(b)',
    from: "the notification's `exploit_nature`",
    value: (s) => text(own(s, 'exploit_nature')),
  },
  {
    id: 'corrective_measures_taken',
    label: 'Corrective or mitigating measures taken',
    section: 'vulnerability',
    stages: { notification: R },
    basis: 'Art. 14(2)(b)',
    from: "the notification's `corrective_measures_taken`, and the case's recorded measures",
    value: (s) => lines(text(own(s, 'corrective_measures_taken')), recordedMeasures(s)),
  },
  {
    id: 'user_measures',
    label: 'Corrective or mitigating measures users can take',
    section: 'vulnerability',
    stages: { notification: R },
    basis: 'Art. 14(2)(b)',
    from: "the notification's `user_measures`",
    value: (s) => text(own(s, 'user_measures')),
  },
  {
    id: 'sensitivity',
    label: 'Sensitivity of the notified information (TLP)',
    section: 'vulnerability',
    stages: { early_warning: R, notification: R, final_report: O },
    basis: 'Art. 14(2)(a) and (b), Art. 16',
    from: "the latest stage submission's `sensitivity`",
    value: (s) => text(latest(s, 'sensitivity')),
  },
  {
    id: 'corrective_measure_available_at',
    label: 'Date the corrective or mitigating measure became available (UTC)',
    section: 'vulnerability',
    stages: { notification: O, final_report: R },
    basis: 'Art. 14(2)(c): the final report is due 14 days later',
    from: "the case's corrective measure (and its release)",
    value: (s) =>
      s.case.corrective_at === null ? null : `${utc(s.case.corrective_at)}${s.release === null ? '' : ` (release ${s.release.product} ${s.release.version})`}`,
  },
  {
    id: 'vulnerability_description',
    label: 'Description of the vulnerability',
    section: 'vulnerability',
    stages: { final_report: R },
    basis: 'Art. 14(2)(c)(i)',
    from: "the final report's `description`",
    value: (s) => text(own(s, 'description')),
  },
  {
    id: 'severity',
    label: 'Severity',
    section: 'vulnerability',
    stages: { notification: O, final_report: R },
    basis: 'Art. 14(2)(c)(i)',
    from: "the final report's `severity`, with the severities and CVSS scores of the linked findings",
    value: (s) => lines(text(own(s, 'severity')), fleetSeverity(s)),
  },
  {
    id: 'impact',
    label: 'Impact',
    section: 'vulnerability',
    stages: { notification: O, final_report: R },
    basis: 'Art. 14(2)(c)(i)',
    from: "the final report's `impact`, with the fleet's affected devices and groups",
    value: (s) => lines(text(own(s, 'impact')), fleetExposure(s)),
  },
  {
    id: 'malicious_actor',
    label: 'Malicious actor that exploited or is exploiting the vulnerability (where available)',
    section: 'vulnerability',
    stages: { final_report: O },
    basis: 'Art. 14(2)(c)(ii)',
    from: "the final report's `malicious_actor`",
    value: (s) => text(own(s, 'malicious_actor')),
  },
  {
    id: 'security_update',
    label: 'Security update or other corrective measures made available',
    section: 'vulnerability',
    stages: { final_report: R },
    basis: 'Art. 14(2)(c)(iii)',
    from: "the final report's `security_update`, with the corrective release and the releases fixing the linked vulnerabilities",
    value: (s) => {
      const own_ = text(own(s, 'security_update'));
      if (own_ === null) return null;
      const fixes = s.fleet.fixedBy.filter((f) => s.release === null || f.product !== s.release.product || f.version !== s.release.version);
      return lines(
        own_,
        s.release === null || s.case.corrective_at === null
          ? null
          : `Corrective release: ${s.release.product} ${s.release.version}, available since ${utc(s.case.corrective_at)}`,
        fixes.length === 0 ? null : `Fixed in: ${fixes.map((f) => `${f.product} ${f.version}`).join(', ')}`,
      );
    },
  },
  // a severe incident having an impact on the security of the product (Art. 14(4), 14(6))
  {
    id: 'suspected_malicious',
    label: 'Suspected of being caused by unlawful or malicious acts',
    section: 'incident',
    stages: { early_warning: R, notification: O, final_report: O },
    basis: 'Art. 14(4)(a)',
    from: "the early warning's `suspected_malicious`",
    value: (s) => yesNo(latest(s, 'suspected_malicious')),
  },
  {
    id: 'severity_grounds',
    label: 'Why the incident is severe (Art. 14(6)(a) or (b))',
    section: 'incident',
    stages: { early_warning: O, notification: O, final_report: O },
    basis: 'Art. 14(6)',
    from: 'the rationale of the latest `reportable` assessment',
    value: (s) => text(s.reportableRationale),
  },
  {
    id: 'cross_border_impact',
    label: 'Cross-border impact (Member States concerned)',
    section: 'incident',
    stages: { early_warning: O, notification: O, final_report: O },
    basis: 'Art. 14(4)(a), Art. 16',
    from: "the latest stage submission's `member_states`",
    value: (s) => {
      const ms = memberStates(s);
      if (ms === undefined) return null;
      if (ms.length === 0) return 'Not known (no Member State indicated)';
      return ms.length === 1 ? `No: one Member State (${ms[0]})` : `Yes: ${ms.length} Member States (${ms.join(', ')})`;
    },
  },
  {
    id: 'incident_nature',
    label: 'Nature of the incident',
    section: 'incident',
    stages: { notification: R },
    basis: 'Art. 14(4)(b)',
    from: "the notification's `incident_nature`",
    value: (s) => text(own(s, 'incident_nature')),
  },
  {
    id: 'initial_assessment',
    label: 'Initial assessment of the incident',
    section: 'incident',
    stages: { notification: R },
    basis: 'Art. 14(4)(b)',
    from: "the notification's `initial_assessment`",
    value: (s) => text(own(s, 'initial_assessment')),
  },
  {
    id: 'corrective_measures_taken',
    label: 'Corrective or mitigating measures taken',
    section: 'incident',
    stages: { notification: R },
    basis: 'Art. 14(4)(b)',
    from: "the notification's `corrective_measures_taken`, and the case's recorded measures",
    value: (s) => lines(text(own(s, 'corrective_measures_taken')), recordedMeasures(s)),
  },
  {
    id: 'user_measures',
    label: 'Corrective or mitigating measures users can take',
    section: 'incident',
    stages: { notification: R },
    basis: 'Art. 14(4)(b)',
    from: "the notification's `user_measures`",
    value: (s) => text(own(s, 'user_measures')),
  },
  {
    id: 'sensitivity',
    label: 'Sensitivity of the notified information (TLP)',
    section: 'incident',
    stages: { early_warning: R, notification: R, final_report: O },
    basis: 'Art. 14(4)(b), Art. 16',
    from: "the latest stage submission's `sensitivity`",
    value: (s) => text(latest(s, 'sensitivity')),
  },
  {
    id: 'incident_description',
    label: 'Detailed description of the incident',
    section: 'incident',
    stages: { final_report: R },
    basis: 'Art. 14(4)(c)(i)',
    from: "the final report's `description`",
    value: (s) => text(own(s, 'description')),
  },
  {
    id: 'severity',
    label: 'Severity',
    section: 'incident',
    stages: { final_report: R },
    basis: 'Art. 14(4)(c)(i)',
    from: "the final report's `severity`",
    value: (s) => text(own(s, 'severity')),
  },
  {
    id: 'impact',
    label: 'Impact',
    section: 'incident',
    stages: { notification: O, final_report: R },
    basis: 'Art. 14(4)(c)(i)',
    from: "the final report's `impact`, with the devices running the case's artifacts and their groups",
    value: (s) => lines(text(own(s, 'impact')), fleetExposure(s)),
  },
  {
    id: 'root_cause',
    label: 'Type of threat or root cause that likely triggered the incident',
    section: 'incident',
    stages: { final_report: R },
    basis: 'Art. 14(4)(c)(ii)',
    from: "the final report's `root_cause`",
    value: (s) => text(own(s, 'root_cause')),
  },
  {
    id: 'mitigation_measures',
    label: 'Applied and ongoing mitigation measures',
    section: 'incident',
    stages: { final_report: R },
    basis: 'Art. 14(4)(c)(iii)',
    from: "the final report's `mitigation_measures`, and the case's recorded measures",
    value: (s) => lines(text(own(s, 'mitigation_measures')), recordedMeasures(s)),
  },
];

export const SRP_FORM = Object.freeze({
  name: 'ENISA Single Reporting Platform: CRA Article 14 notification',
  source:
    'Regulation (EU) 2024/2847 Art. 14(2), 14(4), 14(6) and 16; the single reporting platform form as publicly described by ENISA (no published field list)',
  /** Raise when a row changes: `<year>-<month>.<revision>` of the form it follows. */
  version: '2026-11.1',
  fields: FIELDS,
});

/** The form's fields for a stage and case kind, in the form's order. */
export function srpFields(stage: SrpStage, kind: CaseKind): SrpField[] {
  const section: SrpSection = kind === 'exploited_vulnerability' ? 'vulnerability' : 'incident';
  return SRP_FORM.fields.filter((f) => (f.section === 'common' || f.section === section) && f.stages[stage] !== undefined);
}
