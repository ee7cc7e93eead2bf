/**
 * Article 14(8) information to users as a CSAF 2.0 security advisory (OASIS Common Security
 * Advisory Framework, the machine-readable format the Regulation points to): the product tree
 * from the case's artifacts and the fixing release, one vulnerability per case vulnerability
 * id, remediation from the fixing release (vendor fix) and from the measures users can take
 * (mitigation). Every generated document is validated against the official CSAF 2.0 JSON schema
 * (schemas/csaf) before it is recorded.
 */
import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { ServerError } from '../../errors/server-error.js';
import { digestHex, type Digest } from '@svc/release-core';
import type { SubmissionContent } from './fields.js';

const SCHEMA_DIR = new URL('../../../schemas/csaf/', import.meta.url);
const CVSS = ['cvss-v2.0', 'cvss-v3.0', 'cvss-v3.1'] as const;

let validator: ValidateFunction | undefined;

/** The compiled CSAF 2.0 schema (2020-12) with the three FIRST CVSS schemas under the URLs it references. */
function csafValidator(): ValidateFunction {
  if (validator !== undefined) return validator;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  for (const name of CVSS) {
    const schema = JSON.parse(readFileSync(new URL(`referenced_schema/first/${name}.json`, SCHEMA_DIR), 'utf8')) as Record<string, unknown>;
    delete schema.$schema;
    delete schema.id;
    ajv.addSchema({ ...schema, $id: `https://www.first.org/cvss/${name}.json` });
  }
  validator = ajv.compile(JSON.parse(readFileSync(new URL('csaf_json_schema.json', SCHEMA_DIR), 'utf8')) as object);
  return validator;
}

/** Schema problems of a document (`/path: message`), empty when it is a valid CSAF 2.0 document. */
export function csafSchemaIssues(doc: unknown): string[] {
  const validate = csafValidator();
  if (validate(doc)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'}: ${e.message ?? 'invalid'}`);
}

const TLP_V1: Record<string, 'WHITE' | 'GREEN' | 'AMBER' | 'RED'> = {
  'TLP:CLEAR': 'WHITE',
  'TLP:GREEN': 'GREEN',
  'TLP:AMBER': 'AMBER',
  'TLP:AMBER+STRICT': 'AMBER',
  'TLP:RED': 'RED',
};

export interface CsafFacts {
  caseId: string;
  kind: 'exploited_vulnerability' | 'severe_incident';
  publisherName: string;
  content: SubmissionContent;
  vulnerabilityIds: readonly string[];
  artifacts: readonly { id: string; name: string; version: string; digest: string; filename: string }[];
  fixingRelease: { id: string; product: string; version: string; availableAt: Date } | null;
  /** Earlier advisories of this correction chain (oldest first): the revision history. */
  revisions: readonly { at: Date }[];
  now: Date;
}

/** The CSAF 2.0 advisory of a case; CSAF_INVALID-free by construction, checked by `assertCsaf`. */
export function buildCsaf(f: CsafFacts): Record<string, unknown> {
  const c = f.content;
  const history = [...f.revisions.map((r) => r.at), f.now];
  const affectedIds = f.artifacts.map((a) => `CSAFPID-A-${a.id}`);
  const fixedIds = f.fixingRelease === null ? [] : [`CSAFPID-R-${f.fixingRelease.id}`];
  const byName = new Map<string, CsafFacts['artifacts'][number][]>();
  for (const a of f.artifacts) byName.set(a.name, [...(byName.get(a.name) ?? []), a]);
  const productBranches: Record<string, unknown>[] = [...byName].map(([name, versions]) => ({
    category: 'product_name',
    name,
    branches: versions.map((a) => ({
      category: 'product_version',
      name: a.version,
      product: {
        name: `${a.name} ${a.version}`,
        product_id: `CSAFPID-A-${a.id}`,
        product_identification_helper: { hashes: [{ file_hashes: [{ algorithm: 'sha256', value: digestHex(a.digest as Digest) }], filename: a.filename }] },
      },
    })),
  }));
  if (f.fixingRelease !== null) {
    const r = f.fixingRelease;
    productBranches.push({
      category: 'product_name',
      name: r.product,
      branches: [{ category: 'product_version', name: r.version, product: { name: `${r.product} ${r.version}`, product_id: `CSAFPID-R-${r.id}` } }],
    });
  }
  const remediations: Record<string, unknown>[] = [];
  if (f.fixingRelease !== null) {
    remediations.push({
      category: 'vendor_fix',
      details: `Update to ${f.fixingRelease.product} ${f.fixingRelease.version}.`,
      date: f.fixingRelease.availableAt.toISOString(),
      ...(affectedIds.length > 0 ? { product_ids: affectedIds } : {}),
    });
  }
  remediations.push({ category: 'mitigation', details: String(c.user_measures), ...(affectedIds.length > 0 ? { product_ids: affectedIds } : {}) });
  const productStatus: Record<string, string[]> = {};
  if (affectedIds.length > 0) productStatus.known_affected = affectedIds;
  if (fixedIds.length > 0) productStatus.fixed = fixedIds;
  const vulnerability = (id: string | undefined): Record<string, unknown> => ({
    ...(id !== undefined && /^CVE-[0-9]{4}-[0-9]{4,}$/.test(id) ? { cve: id } : {}),
    ...(id !== undefined && !/^CVE-/.test(id) ? { ids: [{ system_name: id.split('-')[0]!, text: id }] } : {}),
    notes: [{ category: 'summary', title: 'Summary', text: String(c.summary) }],
    ...(Object.keys(productStatus).length > 0 ? { product_status: productStatus } : {}),
    remediations,
    ...(f.kind === 'exploited_vulnerability'
      ? { threats: [{ category: 'exploit_status', details: 'Actively exploited (reported under Article 14 of Regulation (EU) 2024/2847).' }] }
      : {}),
  });
  const vulnerabilities =
    f.vulnerabilityIds.length > 0 ? f.vulnerabilityIds.map((id) => vulnerability(id)) : f.kind === 'exploited_vulnerability' ? [vulnerability(undefined)] : [];
  return {
    document: {
      category: f.kind === 'exploited_vulnerability' ? 'csaf_security_advisory' : 'csaf_security_incident_response',
      csaf_version: '2.0',
      publisher: { category: 'vendor', name: f.publisherName, namespace: String(c.publisher_namespace) },
      title: String(c.title),
      aggregate_severity: { text: String(c.severity) },
      distribution: { tlp: { label: TLP_V1[String(c.sensitivity ?? 'TLP:CLEAR')] ?? 'WHITE', url: 'https://www.first.org/tlp/' } },
      notes: [
        { category: 'summary', title: 'Summary', text: String(c.summary) },
        { category: 'general', title: 'Measures users can take', text: String(c.user_measures) },
      ],
      tracking: {
        id: `SVC-CASE-${f.caseId}`,
        status: 'final',
        version: String(history.length),
        initial_release_date: history[0]!.toISOString(),
        current_release_date: f.now.toISOString(),
        revision_history: history.map((at, i) => ({
          date: at.toISOString(),
          number: String(i + 1),
          summary: i === 0 ? 'Initial advisory.' : 'Corrected advisory.',
        })),
        generator: { engine: { name: 'svc' }, date: f.now.toISOString() },
      },
    },
    ...(productBranches.length > 0 ? { product_tree: { branches: [{ category: 'vendor', name: f.publisherName, branches: productBranches }] } } : {}),
    ...(vulnerabilities.length > 0 ? { vulnerabilities } : {}),
  };
}

/** Refuses (SUBMISSION_INVALID naming the schema paths) a document the CSAF 2.0 schema rejects. */
export function assertCsaf(doc: unknown): void {
  const issues = csafSchemaIssues(doc);
  if (issues.length > 0)
    throw new ServerError('SUBMISSION_INVALID', `advisory: the generated CSAF document is not valid CSAF 2.0: ${issues.slice(0, 5).join('; ')}`);
}
