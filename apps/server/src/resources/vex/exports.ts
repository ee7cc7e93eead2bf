/**
 * A product's VEX, exported in three formats from one model: CSAF 2.0 (`csaf_vex`), OpenVEX
 * 0.2.0 and CycloneDX 1.6 VEX (`vulnerabilities[].analysis`). The product is a release
 * product; its artifacts are those its releases name. The model holds, per artifact,
 * vulnerability and component, the statement in effect, chosen as a finding's status is
 * (resources/findings/matching.ts `effectiveVex`): the latest by statement time, then by
 * recording order, a statement naming one of the vulnerability's ids (the findings' aliases
 * merge a GHSA and its CVE into one vulnerability) and a statement on the whole artifact
 * setting aside older statements on its components. Findings give the ids and the summary of
 * each vulnerability and the names of components; the product's releases give the fix: the
 * release that first ships an artifact stated `fixed` is the one a `fixed` status and an
 * update recommendation name. History: each VEX document attached to an artifact of the
 * product is one revision. Pure; the documents are equal for equal facts (the generator date
 * aside). Decisions and mappings: docs/vulnerabilities.md, "VEX exports".
 */
import { createHash } from 'node:crypto';
import { canonicalize, digestHex } from '@svc/release-core';
import { PackageURL } from 'packageurl-js';
import { CSAF_LANG, csafCanonicalUrl, csafFileHashes, csafFilename, productNameBranches } from '../case-submissions/csaf.js';
import type { VexStatus } from './documents.js';
import type { ExportArtifactRow, ExportFindingRow, StatementRow } from './queries.js';

export const VEX_EXPORT_FORMATS = ['csaf', 'openvex', 'cyclonedx'] as const;
export type VexExportFormat = (typeof VEX_EXPORT_FORMATS)[number];

/** OpenVEX 0.2.0 justifications, which CSAF 2.0 uses as its VEX flag labels (section 3.2.3.5). */
export const OPENVEX_JUSTIFICATIONS = [
  'component_not_present',
  'vulnerable_code_not_present',
  'vulnerable_code_not_in_execute_path',
  'vulnerable_code_cannot_be_controlled_by_adversary',
  'inline_mitigations_already_exist',
] as const;
type OpenVexJustification = (typeof OPENVEX_JUSTIFICATIONS)[number];

/** CycloneDX 1.6 `analysis.justification` values read as OpenVEX/CSAF justifications (closest meaning). */
export const CYCLONEDX_TO_OPENVEX: Record<string, OpenVexJustification> = {
  code_not_present: 'vulnerable_code_not_present',
  code_not_reachable: 'vulnerable_code_not_in_execute_path',
  requires_configuration: 'vulnerable_code_cannot_be_controlled_by_adversary',
  requires_dependency: 'component_not_present',
  requires_environment: 'vulnerable_code_cannot_be_controlled_by_adversary',
  protected_by_compiler: 'inline_mitigations_already_exist',
  protected_at_runtime: 'inline_mitigations_already_exist',
  protected_at_perimeter: 'inline_mitigations_already_exist',
  protected_by_mitigating_control: 'inline_mitigations_already_exist',
};

/** OpenVEX/CSAF justifications written as CycloneDX 1.6 ones. */
export const OPENVEX_TO_CYCLONEDX: Record<OpenVexJustification, string> = {
  component_not_present: 'code_not_present',
  vulnerable_code_not_present: 'code_not_present',
  vulnerable_code_not_in_execute_path: 'code_not_reachable',
  vulnerable_code_cannot_be_controlled_by_adversary: 'requires_environment',
  inline_mitigations_already_exist: 'protected_by_mitigating_control',
};

const CYCLONEDX_RESPONSES = new Set(['can_not_fix', 'will_not_fix', 'update', 'rollback', 'workaround_available']);
const CYCLONEDX_STATE: Record<VexStatus, string> = {
  affected: 'exploitable',
  fixed: 'resolved',
  not_affected: 'not_affected',
  under_investigation: 'in_triage',
};
/** CSAF remediation category of an action statement made of CycloneDX responses (its first one); free text is a mitigation. */
const RESPONSE_REMEDIATION: Record<string, string> = {
  can_not_fix: 'none_available',
  will_not_fix: 'no_fix_planned',
  update: 'vendor_fix',
  rollback: 'mitigation',
  workaround_available: 'workaround',
};

/** Component kinds as CycloneDX component types. */
const CYCLONEDX_TYPE: Record<string, string> = {
  container: 'container',
  model: 'machine-learning-model',
  config: 'data',
  'service-binary': 'application',
  'os-bundle': 'firmware',
};

export interface VexRelease {
  id: string;
  version: string;
  created_at: Date;
  artifact_ids: readonly string[];
}

export interface VexExportFacts {
  product: string;
  publisherName: string;
  /** The publisher's namespace (an https URL in production): CSAF `publisher.namespace`, the base of the OpenVEX `@id`. */
  namespace: string;
  /** `SVC_CSAF_BASE_URL`: the publisher's CSAF directory (the canonical URL of the CSAF document); unset, `/.well-known/csaf` at the namespace. */
  csafBaseUrl: string | undefined;
  artifacts: readonly ExportArtifactRow[];
  /** The product's releases, oldest first. */
  releases: readonly VexRelease[];
  /** Every statement recorded on the artifacts. */
  statements: readonly StatementRow[];
  findings: readonly ExportFindingRow[];
  now: Date;
}

interface Component {
  purl: string;
  name: string;
  version: string | null;
}

/** A statement in effect for one artifact (and component) and one vulnerability. */
export interface EffectiveStatement {
  artifact: ExportArtifactRow;
  component: Component | null;
  status: VexStatus;
  justification: string | null;
  impact: string | null;
  action: string | null;
  at: Date;
}

export interface VexVulnerability {
  /** The vulnerability's key: its lowest CVE when a finding knows one, else the id stated. */
  key: string;
  /** Every id known for it, the key first. */
  ids: string[];
  summary: string | null;
  statements: EffectiveStatement[];
  /** Fixed artifact id -> the product's first release that ships it. */
  fixedIn: Map<string, VexRelease>;
  /** The newest release shipping an artifact stated fixed: what an affected artifact updates to. */
  update: VexRelease | undefined;
}

export interface VexRevision {
  at: Date;
  digest: string;
  artifact: ExportArtifactRow;
  statements: number;
}

export interface VexModel {
  product: string;
  publisherName: string;
  namespace: string;
  csafBaseUrl: string | undefined;
  vulnerabilities: VexVulnerability[];
  /** Each attached document, oldest first. */
  revisions: VexRevision[];
  now: Date;
}

type Stated = Pick<StatementRow, 'statement_at' | 'recorded_at'>;
/** `a` takes precedence over `b`: later statement time, or the same time recorded later (as `effectiveVex`). */
const supersedes = (a: Stated, b: Stated) =>
  a.statement_at > b.statement_at || (a.statement_at.getTime() === b.statement_at.getTime() && a.recorded_at >= b.recorded_at);

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const artifactOrder = (a: ExportArtifactRow, b: ExportArtifactRow) => byText(a.name, b.name) || byText(a.version, b.version) || byText(a.id, b.id);

export function vexModel(f: VexExportFacts): VexModel {
  const artifacts = new Map(f.artifacts.map((a) => [a.id, a]));
  const keyOf = new Map<string, string>();
  const idsOf = new Map<string, Set<string>>();
  const summaryOf = new Map<string, string>();
  const components = new Map<string, Component>();
  for (const x of f.findings) {
    const ids = idsOf.get(x.vuln_key) ?? new Set([x.vuln_key]);
    for (const id of [x.vuln_key, ...x.aliases]) {
      keyOf.set(id, x.vuln_key);
      ids.add(id);
    }
    idsOf.set(x.vuln_key, ids);
    if (x.summary && !summaryOf.has(x.vuln_key)) summaryOf.set(x.vuln_key, x.summary);
    components.set(x.component_purl, { purl: x.component_purl, name: x.component_name, version: x.component_version });
  }
  const latest = new Map<string, { key: string; s: StatementRow }>();
  const slot = (artifactId: string, key: string, purl: string | null) => `${artifactId}\u0000${key}\u0000${purl ?? ''}`;
  const revisions = new Map<string, VexRevision>();
  for (const s of f.statements) {
    const artifact = artifacts.get(s.artifact_id);
    if (artifact === undefined) continue;
    const key = keyOf.get(s.vuln_id) ?? s.vuln_id;
    const ids = idsOf.get(key) ?? new Set([key]);
    ids.add(s.vuln_id);
    idsOf.set(key, ids);
    const k = slot(s.artifact_id, key, s.component_purl);
    const current = latest.get(k);
    if (current === undefined || supersedes(s, current.s)) latest.set(k, { key, s });
    const doc = `${s.artifact_id}\u0000${s.document_digest}\u0000${s.recorded_at.getTime()}`;
    const rev = revisions.get(doc) ?? { at: s.recorded_at, digest: s.document_digest, artifact, statements: 0 };
    rev.statements += 1;
    revisions.set(doc, rev);
  }
  // a statement on the whole artifact that is later than one on a component decides that component too
  for (const [k, { key, s }] of latest) {
    if (s.component_purl === null) continue;
    const whole = latest.get(slot(s.artifact_id, key, null));
    if (whole !== undefined && supersedes(whole.s, s)) latest.delete(k);
  }
  const firstRelease = new Map<string, VexRelease>();
  for (const r of f.releases) for (const a of r.artifact_ids) if (!firstRelease.has(a)) firstRelease.set(a, r);

  const byKey = new Map<string, EffectiveStatement[]>();
  for (const { key, s } of latest.values()) {
    const list = byKey.get(key) ?? [];
    list.push({
      artifact: artifacts.get(s.artifact_id)!,
      component: s.component_purl === null ? null : (components.get(s.component_purl) ?? componentOfPurl(s.component_purl)),
      status: s.status,
      justification: s.justification,
      impact: s.impact_statement,
      action: s.action_statement,
      at: s.statement_at,
    });
    byKey.set(key, list);
  }
  const vulnerabilities = [...byKey]
    .sort(([a], [b]) => byText(a, b))
    .map(([key, statements]): VexVulnerability => {
      statements.sort((a, b) => artifactOrder(a.artifact, b.artifact) || byText(a.component?.purl ?? '', b.component?.purl ?? ''));
      const fixedIn = new Map<string, VexRelease>();
      for (const s of statements) {
        const r = firstRelease.get(s.artifact.id);
        if (s.status === 'fixed' && r !== undefined) fixedIn.set(s.artifact.id, r);
      }
      const update = [...fixedIn.values()].reduce<VexRelease | undefined>(
        (best, r) => (best === undefined || r.created_at > best.created_at ? r : best),
        undefined,
      );
      const ids = [key, ...[...idsOf.get(key)!].filter((i) => i !== key).sort(byText)];
      return { key, ids, summary: summaryOf.get(key) ?? null, statements, fixedIn, update };
    });
  return {
    product: f.product,
    publisherName: f.publisherName,
    namespace: f.namespace,
    csafBaseUrl: f.csafBaseUrl,
    vulnerabilities,
    revisions: [...revisions.values()].sort((a, b) => a.at.getTime() - b.at.getTime() || artifactOrder(a.artifact, b.artifact) || byText(a.digest, b.digest)),
    now: f.now,
  };
}

function componentOfPurl(purl: string): Component {
  try {
    const p = PackageURL.fromString(purl);
    return { purl, name: p.namespace ? `${p.namespace}/${p.name}` : p.name, version: p.version ?? null };
  } catch {
    return { purl, name: purl, version: null };
  }
}

const iso = (d: Date) => d.toISOString();
const hex = (a: ExportArtifactRow) => digestHex(a.digest);
const releaseName = (product: string, r: VexRelease) => `${product} ${r.version} (release ${r.id})`;
const fixedText = (product: string, r: VexRelease) => `Fixed in ${releaseName(product, r)}.`;
const updateText = (product: string, r: VexRelease) => `Update to ${releaseName(product, r)}, which contains the fix.`;
const NO_FIX = 'No fix is available yet.';
const isOpenVexJustification = (j: string | null): j is OpenVexJustification => j !== null && (OPENVEX_JUSTIFICATIONS as readonly string[]).includes(j);
/** The statement's justification as an OpenVEX/CSAF one, when it is one or maps to one. */
export const openvexJustification = (j: string | null): OpenVexJustification | undefined =>
  isOpenVexJustification(j) ? j : j === null ? undefined : CYCLONEDX_TO_OPENVEX[j];
/** The statement's justification as a CycloneDX one, when it is one or maps to one. */
export const cyclonedxJustification = (j: string | null): string | undefined =>
  j === null ? undefined : j in CYCLONEDX_TO_OPENVEX ? j : isOpenVexJustification(j) ? OPENVEX_TO_CYCLONEDX[j] : undefined;
/** An action statement made of CycloneDX responses (`update, rollback`), or undefined for free text. */
const responsesOf = (action: string | null) => {
  if (action === null) return undefined;
  const words = action.split(',').map((w) => w.trim());
  return words.every((w) => CYCLONEDX_RESPONSES.has(w)) ? words : undefined;
};

/** The artifact as a package URL (generic, with its SHA-256 checksum): the OpenVEX product `@id`. */
export function artifactPurl(a: ExportArtifactRow): string {
  return new PackageURL('generic', undefined, a.name, a.version, { checksum: a.digest }, undefined).toString();
}

/** The tracking id of the CSAF VEX of a product (also its file name, CSAF 2.0 section 5.1). */
export const csafVexTrackingId = (product: string) => `SVC-VEX-${product}`;

function group<T>(items: readonly T[], keyOf: (t: T) => string | undefined): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const t of items) {
    const k = keyOf(t);
    if (k === undefined) continue;
    out.set(k, [...(out.get(k) ?? []), t]);
  }
  return out;
}

const statusCounts = (m: VexModel) => {
  const counts: Record<VexStatus, number> = { affected: 0, not_affected: 0, fixed: 0, under_investigation: 0 };
  for (const v of m.vulnerabilities) for (const s of v.statements) counts[s.status] += 1;
  return counts;
};

/** CSAF 2.0 `csaf_vex`: artifacts (and components of them a statement names) as products, one vulnerability per key. */
export function buildCsafVex(m: VexModel): Record<string, unknown> {
  const first = m.revisions[0]!;
  const last = m.revisions[m.revisions.length - 1]!;
  const artifactId = (a: ExportArtifactRow) => `CSAFPID-A-${a.id}`;
  const purls = [...new Set(m.vulnerabilities.flatMap((v) => v.statements.flatMap((s) => (s.component ? [s.component.purl] : []))))].sort(byText);
  const componentId = (c: Component) => `CSAFPID-C-${purls.indexOf(c.purl) + 1}`;
  const productId = (s: EffectiveStatement) =>
    s.component === null ? artifactId(s.artifact) : `${artifactId(s.artifact)}-${componentId(s.component).slice('CSAFPID-'.length)}`;

  const used = new Map<string, ExportArtifactRow>();
  const componentsOf = new Map<string, Component>();
  const relationships = new Map<string, Record<string, unknown>>();
  for (const v of m.vulnerabilities)
    for (const s of v.statements) {
      used.set(s.artifact.id, s.artifact);
      if (s.component === null) continue;
      componentsOf.set(s.component.purl, s.component);
      relationships.set(productId(s), {
        category: 'default_component_of',
        product_reference: componentId(s.component),
        relates_to_product_reference: artifactId(s.artifact),
        full_product_name: { name: `${componentName(s.component)} in ${s.artifact.name} ${s.artifact.version}`, product_id: productId(s) },
      });
    }
  const names = new Map<string, Record<string, unknown>[]>();
  for (const a of [...used.values()].sort(artifactOrder)) {
    names.set(a.name, [
      ...(names.get(a.name) ?? []),
      {
        category: 'product_version',
        name: a.version,
        product: { name: `${a.name} ${a.version}`, product_id: artifactId(a), product_identification_helper: csafFileHashes([a]) },
      },
    ]);
  }
  const counts = statusCounts(m);
  const vulnerabilities = m.vulnerabilities.map((v) => {
    const ids = (status: VexStatus) => [...new Set(v.statements.filter((s) => s.status === status).map(productId))].sort(byText);
    const productStatus: Record<string, string[]> = {};
    for (const [field, status] of [
      ['known_affected', 'affected'],
      ['known_not_affected', 'not_affected'],
      ['fixed', 'fixed'],
      ['under_investigation', 'under_investigation'],
    ] as const) {
      const list = ids(status);
      if (list.length > 0) productStatus[field] = list;
    }
    const notAffected = v.statements.filter((s) => s.status === 'not_affected');
    const flags = [...group(notAffected, (s) => openvexJustification(s.justification))].map(([label, list]) => ({ label, product_ids: list.map(productId) }));
    // CSAF 2.0 6.1.27.9: every known_not_affected product has a flag or an impact statement
    const threats = [
      ...group(
        notAffected,
        (s) =>
          s.impact ??
          (openvexJustification(s.justification) !== undefined ? undefined : s.justification !== null ? `Not affected: ${s.justification}.` : 'Not affected.'),
      ),
    ].map(([details, list]) => ({ category: 'impact', details, product_ids: list.map(productId) }));
    const affected = v.statements.filter((s) => s.status === 'affected');
    const remediations: Record<string, unknown>[] = [];
    // a fixed product names the release that first ships it
    for (const list of group(
      v.statements.filter((s) => s.status === 'fixed'),
      (s) => v.fixedIn.get(s.artifact.id)?.id,
    ).values()) {
      const r = v.fixedIn.get(list[0]!.artifact.id)!;
      remediations.push({ category: 'vendor_fix', details: fixedText(m.product, r), date: iso(r.created_at), product_ids: list.map(productId) });
    }
    // CSAF 2.0 6.1.27.10: every known_affected product has a remediation
    if (affected.length > 0 && v.update !== undefined)
      remediations.push({
        category: 'vendor_fix',
        details: updateText(m.product, v.update),
        date: iso(v.update.created_at),
        product_ids: affected.map(productId),
      });
    for (const [action, list] of group(affected, (s) => s.action ?? undefined))
      remediations.push({ category: RESPONSE_REMEDIATION[responsesOf(action)?.[0] ?? ''] ?? 'mitigation', details: action, product_ids: list.map(productId) });
    const bare = affected.filter((s) => s.action === null);
    if (bare.length > 0 && v.update === undefined) remediations.push({ category: 'none_available', details: NO_FIX, product_ids: bare.map(productId) });
    // CSAF 2.0 6.2.2: a product under investigation has a remediation too: the release with the fix, else none yet
    const investigated = v.statements.filter((s) => s.status === 'under_investigation').map(productId);
    if (investigated.length > 0)
      remediations.push(
        v.update !== undefined
          ? { category: 'vendor_fix', details: updateText(m.product, v.update), date: iso(v.update.created_at), product_ids: investigated }
          : { category: 'none_available', details: 'Under investigation: no fix is available yet.', product_ids: investigated },
      );
    const cve = /^CVE-[0-9]{4}-[0-9]{4,}$/.test(v.key) ? v.key : undefined;
    const others = v.ids.filter((i) => i !== cve);
    return {
      ...(cve !== undefined ? { cve } : {}),
      ...(others.length > 0 ? { ids: others.map((text) => ({ system_name: systemName(text), text })) } : {}),
      // CSAF 2.0 6.1.27.5: every vulnerability of a VEX has notes; without an imported advisory, they say where the status comes from
      notes: [
        v.summary !== null
          ? { category: 'summary', title: 'Summary', text: v.summary }
          : { category: 'general', title: 'Source', text: `No imported advisory describes ${v.key}: the status is the vendor's VEX statements alone.` },
      ],
      product_status: productStatus,
      ...(flags.length > 0 ? { flags } : {}),
      ...(threats.length > 0 ? { threats } : {}),
      ...(remediations.length > 0 ? { remediations } : {}),
    };
  });
  return {
    document: {
      category: 'csaf_vex',
      csaf_version: '2.0',
      lang: CSAF_LANG,
      publisher: { category: 'vendor', name: m.publisherName, namespace: m.namespace },
      title: `${m.product}: VEX`,
      // a VEX is for the product's users: TLP:CLEAR (CSAF 2.0 still calls it WHITE)
      distribution: { tlp: { label: 'WHITE', url: 'https://www.first.org/tlp/' } },
      references: [
        {
          category: 'self',
          summary: 'Canonical URL of this document',
          url: csafCanonicalUrl(m.csafBaseUrl, m.namespace, 'WHITE', first.at, csafVexTrackingId(m.product)),
        },
      ],
      notes: [
        {
          category: 'summary',
          title: 'Summary',
          text:
            `The status of ${m.product} for ${plural(m.vulnerabilities.length, 'vulnerability', 'vulnerabilities')}, as the vendor's VEX statements on its artifacts state it: ` +
            `${counts.affected} affected, ${counts.not_affected} not affected, ${counts.fixed} fixed, ${counts.under_investigation} under investigation.`,
        },
      ],
      tracking: {
        id: csafVexTrackingId(m.product),
        status: 'final',
        version: String(m.revisions.length),
        initial_release_date: iso(first.at),
        current_release_date: iso(last.at),
        revision_history: m.revisions.map((r, i) => ({
          date: iso(r.at),
          number: String(i + 1),
          summary: `VEX document ${r.digest} attached to ${r.artifact.name} ${r.artifact.version} (${plural(r.statements, 'statement', 'statements')}).`,
        })),
        generator: { engine: { name: 'svc' }, date: iso(m.now) },
      },
    },
    product_tree: {
      branches: [
        { category: 'vendor', name: m.publisherName, branches: [{ category: 'product_family', name: m.product, branches: productNameBranches(names) }] },
      ],
      ...(componentsOf.size > 0
        ? {
            full_product_names: [...componentsOf.values()]
              .sort((a, b) => byText(a.purl, b.purl))
              .map((c) => ({ name: componentName(c), product_id: componentId(c), product_identification_helper: { purl: c.purl } })),
            relationships: [...relationships.values()],
          }
        : {}),
    },
    vulnerabilities,
  };
}

const componentName = (c: Component) => (c.version === null ? c.name : `${c.name} ${c.version}`);
const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
/** The naming system of a vulnerability id: its prefix (GHSA, PYSEC, DSA...). */
const systemName = (id: string) => (id.includes('-') ? id.slice(0, id.indexOf('-')) : id);

/** OpenVEX 0.2.0: one statement per artifact (a component of it as a subcomponent) and vulnerability. */
export function buildOpenVex(m: VexModel): Record<string, unknown> {
  const statements = m.vulnerabilities.flatMap((v) =>
    v.statements.map((s) => {
      const justification = s.status === 'not_affected' ? openvexJustification(s.justification) : undefined;
      // OpenVEX: not_affected needs a justification or an impact statement, affected an action statement
      const impact =
        s.impact ??
        (s.status === 'not_affected' && justification === undefined
          ? s.justification !== null
            ? `Not affected: ${s.justification}.`
            : 'Not affected.'
          : undefined);
      const action =
        s.status === 'affected'
          ? [s.action, v.update === undefined ? undefined : updateText(m.product, v.update)].filter((x) => x).join(' ') || NO_FIX
          : (s.action ?? undefined);
      const fixedIn = s.status === 'fixed' ? v.fixedIn.get(s.artifact.id) : undefined;
      const purl = artifactPurl(s.artifact);
      return {
        vulnerability: { name: v.key, ...(v.ids.length > 1 ? { aliases: v.ids.slice(1) } : {}), ...(v.summary !== null ? { description: v.summary } : {}) },
        timestamp: iso(s.at),
        products: [
          {
            '@id': purl,
            identifiers: { purl },
            hashes: { 'sha-256': hex(s.artifact) },
            ...(s.component === null ? {} : { subcomponents: [{ '@id': s.component.purl, identifiers: { purl: s.component.purl } }] }),
          },
        ],
        status: s.status,
        ...(justification !== undefined ? { justification } : {}),
        ...(impact !== undefined ? { impact_statement: impact } : {}),
        ...(action !== undefined ? { action_statement: action } : {}),
        ...(fixedIn !== undefined ? { status_notes: fixedText(m.product, fixedIn) } : {}),
      };
    }),
  );
  return {
    '@context': 'https://openvex.dev/ns/v0.2.0',
    '@id': `${m.namespace.replace(/\/+$/, '')}/vex/${encodeURIComponent(m.product)}`,
    author: m.publisherName,
    timestamp: iso(m.revisions[0]!.at),
    last_updated: iso(m.revisions[m.revisions.length - 1]!.at),
    version: m.revisions.length,
    tooling: 'svc',
    statements,
  };
}

/** A stable UUID for the product's BOM (CycloneDX: revisions of one BOM share its serial number and raise `version`). */
function serialNumber(m: VexModel): string {
  const h = createHash('sha256').update(`${m.namespace}\u0000${m.product}`).digest('hex');
  // RFC 9562 layout, version 8 (custom), variant 10
  return `urn:uuid:${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** CycloneDX 1.6 VEX: the artifacts as components (components a statement names nested in them), one vulnerability per key and analysis. */
export function buildCycloneDxVex(m: VexModel): Record<string, unknown> {
  const artifactRef = (a: ExportArtifactRow) => `artifact:${a.id}`;
  const ref = (s: EffectiveStatement) => (s.component === null ? artifactRef(s.artifact) : `${artifactRef(s.artifact)}:${s.component.purl}`);
  const used = new Map<string, { a: ExportArtifactRow; components: Map<string, Component> }>();
  for (const v of m.vulnerabilities)
    for (const s of v.statements) {
      const u = used.get(s.artifact.id) ?? { a: s.artifact, components: new Map() };
      if (s.component !== null) u.components.set(s.component.purl, s.component);
      used.set(s.artifact.id, u);
    }
  const components = [...used.values()]
    .sort((x, y) => artifactOrder(x.a, y.a))
    .map(({ a, components: inner }) => ({
      type: CYCLONEDX_TYPE[a.kind] ?? 'file',
      'bom-ref': artifactRef(a),
      name: a.name,
      version: a.version,
      hashes: [{ alg: 'SHA-256', content: hex(a) }],
      ...(inner.size > 0
        ? {
            components: [...inner.values()]
              .sort((x, y) => byText(x.purl, y.purl))
              .map((c) => ({
                type: 'library',
                'bom-ref': `${artifactRef(a)}:${c.purl}`,
                name: c.name,
                ...(c.version !== null ? { version: c.version } : {}),
                purl: c.purl,
              })),
          }
        : {}),
    }));
  const vulnerabilities = m.vulnerabilities.flatMap((v) => {
    const analysed = v.statements.map((s) => {
      const justification = s.status === 'not_affected' ? cyclonedxJustification(s.justification) : undefined;
      const unmapped = s.status === 'not_affected' && s.justification !== null && justification === undefined ? `Not affected: ${s.justification}.` : undefined;
      const fixedIn = s.status === 'fixed' ? v.fixedIn.get(s.artifact.id) : undefined;
      const detail = [s.impact ?? unmapped, fixedIn === undefined ? undefined : fixedText(m.product, fixedIn)].filter((x) => x).join(' ') || undefined;
      const responses = responsesOf(s.action) ?? [];
      const update = s.status === 'affected' && v.update !== undefined;
      if (update && !responses.includes('update')) responses.push('update');
      const recommendation =
        [responsesOf(s.action) === undefined ? s.action : null, update ? updateText(m.product, v.update!) : null].filter((x) => x).join(' ') || undefined;
      return {
        s,
        analysis: { state: CYCLONEDX_STATE[s.status], justification, response: responses.length > 0 ? responses : undefined, detail },
        recommendation,
      };
    });
    return [...group(analysed, (x) => JSON.stringify([x.analysis, x.recommendation ?? null]))].map(([, list]) => {
      const times = list.map((x) => x.s.at.getTime());
      const { analysis, recommendation } = list[0]!;
      return {
        id: v.key,
        ...(v.ids.length > 1 ? { references: v.ids.slice(1).map((id) => ({ id, source: { name: systemName(id) } })) } : {}),
        ...(v.summary !== null ? { description: v.summary } : {}),
        ...(recommendation !== undefined ? { recommendation } : {}),
        analysis: {
          state: analysis.state,
          ...(analysis.justification !== undefined ? { justification: analysis.justification } : {}),
          ...(analysis.response !== undefined ? { response: analysis.response } : {}),
          ...(analysis.detail !== undefined ? { detail: analysis.detail } : {}),
          firstIssued: iso(new Date(Math.min(...times))),
          lastUpdated: iso(new Date(Math.max(...times))),
        },
        affects: list.map((x) => ({ ref: ref(x.s) })),
      };
    });
  });
  return {
    bomFormat: 'CycloneDX',
    specVersion: '1.6',
    serialNumber: serialNumber(m),
    version: m.revisions.length,
    metadata: {
      timestamp: iso(m.revisions[m.revisions.length - 1]!.at),
      tools: { components: [{ type: 'application', name: 'svc' }] },
      component: { type: 'application', 'bom-ref': `product:${m.product}`, name: m.product },
      manufacturer: { name: m.publisherName },
    },
    components,
    vulnerabilities,
  };
}

/** The serialized export of one format: the body, its media type and the file name it downloads as. */
export interface VexExport {
  body: string;
  contentType: string;
  filename: string;
}

export const VEX_EXPORT_TYPES: Record<VexExportFormat, { contentType: string; filename: (product: string) => string }> = {
  // CSAF 2.0 section 5.1: the file name is the tracking id, lower-case, other runs as `_`
  csaf: { contentType: 'application/json', filename: (p) => csafFilename(csafVexTrackingId(p)) },
  openvex: { contentType: 'application/openvex+json', filename: (p) => `${p}.openvex.json` },
  // CycloneDX: `.cdx.json`, the media type with its version parameter
  cyclonedx: { contentType: 'application/vnd.cyclonedx+json; version=1.6', filename: (p) => `${p}.cdx.json` },
};

/** Builds one format of the model. */
export function renderVex(m: VexModel, format: VexExportFormat): VexExport {
  // CSAF 2.0 6.2.13: the CSAF document's keys sorted (JCS, RFC 8785); the others keep their formats' customary order
  const body =
    format === 'csaf'
      ? Buffer.from(canonicalize(buildCsafVex(m))).toString('utf8')
      : JSON.stringify(format === 'openvex' ? buildOpenVex(m) : buildCycloneDxVex(m));
  return { body, contentType: VEX_EXPORT_TYPES[format].contentType, filename: VEX_EXPORT_TYPES[format].filename(m.product) };
}
