/**
 * Article 14(8) information to users as a CSAF 2.0 security advisory (OASIS Common Security
 * Advisory Framework, the machine-readable format the Regulation points to): the product tree
 * from the case's artifacts and the fixing release, one vulnerability per case vulnerability
 * id, remediation from the fixing release (vendor fix) and from the measures users can take
 * (mitigation), the canonical URL where it is published (`self`) and the publisher's further
 * information (`external`). Every generated document is validated against the official CSAF 2.0
 * JSON schema (schemas/csaf) before it is recorded; the server's tests also hold every document
 * to the mandatory and recommended tests of CSAF 2.0 section 6 (docs/article-14.md).
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

/** The language of the advisory: its fixed texts (headings, the vendor fix) are English, and so are the operator's fields. */
export const CSAF_LANG = 'en';

export interface FileFacts {
  name: string;
  version: string;
  digest: Digest;
  filename: string;
}

export interface CsafFacts {
  caseId: string;
  kind: 'exploited_vulnerability' | 'severe_incident';
  publisherName: string;
  content: SubmissionContent;
  vulnerabilityIds: readonly string[];
  artifacts: readonly (FileFacts & { id: string })[];
  /** The fixing release and the files it installs (its artifacts). */
  fixingRelease: { id: string; product: string; version: string; availableAt: Date; artifacts: readonly FileFacts[] } | null;
  /** Earlier advisories of this correction chain (oldest first): the revision history. */
  revisions: readonly { at: Date }[];
  /** `SVC_CSAF_BASE_URL`: the publisher's CSAF directory; unset, `/.well-known/csaf` at the publisher namespace's origin. */
  baseUrl: string | undefined;
  now: Date;
}

/** CSAF 2.0 section 5.1: the file name of a document is its tracking id, lower-case, every run of other characters than `+`, `-`, a-z and 0-9 one `_`. */
export function csafFilename(trackingId: string): string {
  return `${trackingId.toLowerCase().replace(/[^+\-a-z0-9]+/g, '_')}.json`;
}

/**
 * Where the advisory is published (its canonical URL, the `self` reference): the provider
 * directory layout of CSAF 2.0 section 7.1 (one folder per TLP label, requirement 11: one per
 * year of the initial release) under the publisher's CSAF directory.
 */
export function csafCanonicalUrl(baseUrl: string | undefined, namespace: string, tlp: string, initialRelease: Date, trackingId: string): string {
  const base = (baseUrl ?? new URL('/.well-known/csaf', namespace).toString()).replace(/\/+$/, '');
  return `${base}/${tlp.toLowerCase()}/${initialRelease.getUTCFullYear()}/${csafFilename(trackingId)}`;
}

/** A product identification helper naming files by their SHA-256 (the case advisories and the product VEX export). */
export function csafFileHashes(files: readonly FileFacts[]): Record<string, unknown> {
  return { hashes: files.map((a) => ({ file_hashes: [{ algorithm: 'sha256', value: digestHex(a.digest) }], filename: a.filename })) };
}

/** The `product_name` branches of a product tree: one per name, each holding its `product_version` branches. */
export function productNameBranches(products: ReadonlyMap<string, Record<string, unknown>[]>): Record<string, unknown>[] {
  return [...products].map(([name, versions]) => ({ category: 'product_name', name, branches: versions }));
}

/** The CSAF 2.0 advisory of a case; CSAF_INVALID-free by construction, checked by `assertCsaf`. */
export function buildCsaf(f: CsafFacts): Record<string, unknown> {
  const c = f.content;
  const history = [...f.revisions.map((r) => r.at), f.now];
  const trackingId = `SVC-CASE-${f.caseId}`;
  const tlp = TLP_V1[String(c.sensitivity ?? 'TLP:CLEAR')] ?? 'WHITE';
  const affectedIds = f.artifacts.map((a) => `CSAFPID-A-${a.id}`);
  const fixedIds = f.fixingRelease === null ? [] : [`CSAFPID-R-${f.fixingRelease.id}`];
  // every product of the tree is named by the product status of every vulnerability (CSAF 2.0 6.2.1)
  const products = new Map<string, Record<string, unknown>[]>();
  const add = (name: string, branch: Record<string, unknown>) => products.set(name, [...(products.get(name) ?? []), branch]);
  for (const a of f.artifacts) {
    add(a.name, {
      category: 'product_version',
      name: a.version,
      product: { name: `${a.name} ${a.version}`, product_id: `CSAFPID-A-${a.id}`, product_identification_helper: csafFileHashes([a]) },
    });
  }
  if (f.fixingRelease !== null) {
    const r = f.fixingRelease;
    add(r.product, {
      category: 'product_version',
      name: r.version,
      product: {
        name: `${r.product} ${r.version}`,
        product_id: `CSAFPID-R-${r.id}`,
        // the release is identified by the files it installs
        ...(r.artifacts.length > 0 ? { product_identification_helper: csafFileHashes(r.artifacts) } : {}),
      },
    });
  }
  // a remediation names the products it applies to (CSAF 2.0 6.1.29): without affected products the measures stay in the document notes
  const remediations: Record<string, unknown>[] = [];
  if (affectedIds.length > 0) {
    if (f.fixingRelease !== null) {
      remediations.push({
        category: 'vendor_fix',
        details: `Update to ${f.fixingRelease.product} ${f.fixingRelease.version}.`,
        date: f.fixingRelease.availableAt.toISOString(),
        product_ids: affectedIds,
      });
    }
    remediations.push({ category: 'mitigation', details: String(c.user_measures), product_ids: affectedIds });
  }
  const productStatus: Record<string, string[]> = {};
  if (affectedIds.length > 0) productStatus.known_affected = affectedIds;
  if (fixedIds.length > 0) productStatus.fixed = fixedIds;
  const vulnerability = (id: string | undefined): Record<string, unknown> => ({
    ...(id !== undefined && /^CVE-[0-9]{4}-[0-9]{4,}$/.test(id) ? { cve: id } : {}),
    ...(id !== undefined && !/^CVE-/.test(id) ? { ids: [{ system_name: id.split('-')[0]!, text: id }] } : {}),
    ...(id === undefined ? { title: String(c.title) } : {}),
    notes: [{ category: 'summary', title: 'Summary', text: String(c.summary) }],
    ...(Object.keys(productStatus).length > 0 ? { product_status: productStatus } : {}),
    ...(remediations.length > 0 ? { remediations } : {}),
    ...(f.kind === 'exploited_vulnerability'
      ? { threats: [{ category: 'exploit_status', details: 'Actively exploited (reported under Article 14 of Regulation (EU) 2024/2847).' }] }
      : {}),
  });
  // a security advisory has at least one vulnerability; an incident without vulnerability ids has one for the products it affects
  const vulnerabilities =
    f.vulnerabilityIds.length > 0
      ? f.vulnerabilityIds.map((id) => vulnerability(id))
      : f.kind === 'exploited_vulnerability' || products.size > 0
        ? [vulnerability(undefined)]
        : [];
  const references: Record<string, unknown>[] = [
    {
      category: 'self',
      summary: 'Canonical URL of this advisory',
      url: csafCanonicalUrl(f.baseUrl, String(c.publisher_namespace), tlp, history[0]!, trackingId),
    },
  ];
  if (c.information_url !== undefined)
    references.push({ category: 'external', summary: 'Further information from the publisher', url: String(c.information_url) });
  return {
    document: {
      category: f.kind === 'exploited_vulnerability' ? 'csaf_security_advisory' : 'csaf_security_incident_response',
      csaf_version: '2.0',
      lang: CSAF_LANG,
      publisher: { category: 'vendor', name: f.publisherName, namespace: String(c.publisher_namespace) },
      title: String(c.title),
      aggregate_severity: { text: String(c.severity) },
      distribution: { tlp: { label: tlp, url: 'https://www.first.org/tlp/' } },
      notes: [
        { category: 'summary', title: 'Summary', text: String(c.summary) },
        { category: 'general', title: 'Measures users can take', text: String(c.user_measures) },
      ],
      references,
      tracking: {
        id: trackingId,
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
    ...(products.size > 0
      ? {
          product_tree: {
            branches: [
              {
                category: 'vendor',
                name: f.publisherName,
                branches: productNameBranches(products),
              },
            ],
          },
        }
      : {}),
    ...(vulnerabilities.length > 0 ? { vulnerabilities } : {}),
  };
}

/** Refuses (SUBMISSION_INVALID naming the schema paths) a document the CSAF 2.0 schema rejects. */
export function assertCsaf(doc: unknown): void {
  const issues = csafSchemaIssues(doc);
  if (issues.length > 0)
    throw new ServerError('SUBMISSION_INVALID', `advisory: the generated CSAF document is not valid CSAF 2.0: ${issues.slice(0, 5).join('; ')}`);
}
