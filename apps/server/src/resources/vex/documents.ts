/**
 * VEX documents attached to an artifact: CycloneDX VEX (a CycloneDX 1.4-1.6 BOM whose
 * `vulnerabilities[].analysis` carries the state) and OpenVEX 0.2.0, each validated against
 * its official schema, read into statements with the four OpenVEX statuses. CycloneDX states
 * map as `resolved`/`resolved_with_pedigree` -> fixed, `exploitable` -> affected,
 * `in_triage` -> under_investigation, `false_positive`/`not_affected` -> not_affected. A
 * statement naming a component (a purl in CycloneDX `affects[].ref`, directly or through a
 * component's `bom-ref`; OpenVEX `subcomponents[]`) applies to that component's findings;
 * one naming none applies to every component of the artifact. Pure.
 */
import { ServerError } from '../../errors/server-error.js';
import { identifierProblem, parseJsonDocument } from '../../input-text.js';
import { validateAgainst } from '../json-schemas.js';
import { CYCLONEDX_TYPE, CYCLONEDX_VERSIONS } from '../sboms/documents.js';
import { parsePurl } from '../vulnerabilities/ecosystems.js';
import { SERVER_LIMITS } from '../../limits.js';

export const OPENVEX_TYPE = 'application/openvex+json';
export type VexStatus = 'not_affected' | 'affected' | 'fixed' | 'under_investigation';

export interface ParsedStatement {
  vuln_id: string;
  component_purl: string | null;
  status: VexStatus;
  justification: string | null;
  impact_statement: string | null;
  action_statement: string | null;
  statement_at: Date;
}

const invalid = (m: string) => new ServerError('VEX_INVALID', m);

const CDX_STATE: Record<string, VexStatus> = {
  resolved: 'fixed',
  resolved_with_pedigree: 'fixed',
  exploitable: 'affected',
  in_triage: 'under_investigation',
  false_positive: 'not_affected',
  not_affected: 'not_affected',
};

function canonicalPurl(raw: string, at: string): string {
  let purl: string;
  try {
    purl = parsePurl(raw).purl;
  } catch (e) {
    throw invalid(`${at}: not a package URL (${(e as Error).message})`);
  }
  const long = identifierProblem(purl);
  if (long !== undefined) throw invalid(`${at}: package URL ${long}`);
  return purl;
}

/** A statement's vulnerability id, which the statements index holds. */
function vulnId(raw: string, at: string): string {
  const long = identifierProblem(raw);
  if (long !== undefined) throw invalid(`${at}: ${long}`);
  return raw;
}

function time(raw: unknown, fallback: Date): Date {
  if (typeof raw !== 'string') return fallback;
  const d = new Date(raw);
  return Number.isNaN(d.getTime()) ? fallback : d;
}

export function parseVex(contentType: string, bytes: Uint8Array, now: Date): { format: 'cyclonedx' | 'openvex'; statements: ParsedStatement[] } {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type !== CYCLONEDX_TYPE && type !== OPENVEX_TYPE) throw invalid(`content-type: must be ${CYCLONEDX_TYPE} or ${OPENVEX_TYPE}`);
  const doc = parseJsonDocument(bytes, SERVER_LIMITS.vex.maxBytes, invalid);
  const statements = type === CYCLONEDX_TYPE ? cyclonedxStatements(doc, now) : openvexStatements(doc, now);
  if (statements.length === 0) throw invalid('body: no VEX statement (CycloneDX vulnerabilities[].analysis.state, OpenVEX statements[])');
  if (statements.length > SERVER_LIMITS.vex.maxStatements) throw invalid(`body: more than ${SERVER_LIMITS.vex.maxStatements} statements`);
  return { format: type === CYCLONEDX_TYPE ? 'cyclonedx' : 'openvex', statements };
}

interface CdxVuln {
  id?: string;
  updated?: string;
  analysis?: { state?: string; justification?: string; response?: string[]; detail?: string; firstIssued?: string; lastUpdated?: string };
  affects?: { ref: string }[];
}

function cyclonedxStatements(o: Record<string, unknown>, now: Date): ParsedStatement[] {
  if (o['bomFormat'] !== 'CycloneDX') throw invalid('bomFormat: must be "CycloneDX"');
  if (typeof o['specVersion'] !== 'string' || !(CYCLONEDX_VERSIONS as readonly string[]).includes(o['specVersion']))
    throw invalid(`specVersion: must be one of ${CYCLONEDX_VERSIONS.join(', ')}`);
  const problem = validateAgainst('cyclonedx-1.6', o);
  if (problem !== undefined) throw invalid(problem);
  const docTime = time((o['metadata'] as { timestamp?: unknown } | undefined)?.timestamp, now);
  // bom-ref -> purl, for affects[].ref that point at components of the same document
  const refs = new Map<string, string>();
  const walk = (list: unknown) => {
    for (const c of (list as { 'bom-ref'?: string; purl?: string; components?: unknown }[] | undefined) ?? []) {
      if (c['bom-ref'] && c.purl) refs.set(c['bom-ref'], c.purl);
      walk(c.components);
    }
  };
  walk(o['components']);
  const out: ParsedStatement[] = [];
  ((o['vulnerabilities'] as CdxVuln[] | undefined) ?? []).forEach((v, i) => {
    const at = `vulnerabilities[${i}]`;
    if (!v.id) throw invalid(`${at}.id: is required for a VEX statement`);
    const state = v.analysis?.state;
    if (state === undefined) throw invalid(`${at}.analysis.state: is required for a VEX statement`);
    const status = CDX_STATE[state]!;
    const when = time(v.analysis?.lastUpdated ?? v.analysis?.firstIssued ?? v.updated, docTime);
    const base = {
      vuln_id: vulnId(v.id, `${at}.id`),
      status,
      justification: v.analysis?.justification ?? null,
      impact_statement: v.analysis?.detail ?? null,
      action_statement: v.analysis?.response?.join(', ') ?? null,
      statement_at: when,
    };
    const purls = new Set<string | null>();
    (v.affects ?? []).forEach((a, j) => {
      const purl = a.ref.startsWith('pkg:') ? a.ref : refs.get(a.ref);
      purls.add(purl === undefined ? null : canonicalPurl(purl, `${at}.affects[${j}].ref`));
    });
    if (purls.size === 0 || purls.has(null)) {
      purls.clear();
      purls.add(null);
    }
    for (const p of purls) out.push({ ...base, component_purl: p });
  });
  return out;
}

interface OpenVexStatement {
  vulnerability: { name: string };
  timestamp?: string;
  last_updated?: string;
  products?: { subcomponents?: { '@id'?: string }[] }[];
  status: VexStatus;
  justification?: string;
  impact_statement?: string;
  action_statement?: string;
}

function openvexStatements(o: Record<string, unknown>, now: Date): ParsedStatement[] {
  const problem = validateAgainst('openvex', o);
  if (problem !== undefined) throw invalid(problem);
  const docTime = time(o['last_updated'] ?? o['timestamp'], now);
  const out: ParsedStatement[] = [];
  ((o['statements'] as OpenVexStatement[] | undefined) ?? []).forEach((s, i) => {
    const at = `statements[${i}]`;
    // spec OpenVEX: not_affected needs a justification or an impact statement
    if (s.status === 'not_affected' && !s.justification && !s.impact_statement)
      throw invalid(`${at}.justification: a not_affected statement needs a justification or an impact_statement`);
    const base = {
      vuln_id: vulnId(s.vulnerability.name, `${at}.vulnerability.name`),
      status: s.status,
      justification: s.justification ?? null,
      impact_statement: s.impact_statement ?? null,
      action_statement: s.action_statement ?? null,
      statement_at: time(s.last_updated ?? s.timestamp, docTime),
    };
    const purls = new Set<string>();
    (s.products ?? []).forEach((p, j) =>
      (p.subcomponents ?? []).forEach((c, k) => {
        const id = c['@id'];
        if (id?.startsWith('pkg:')) purls.add(canonicalPurl(id, `${at}.products[${j}].subcomponents[${k}].@id`));
      }),
    );
    if (purls.size === 0) out.push({ ...base, component_purl: null });
    for (const p of purls) out.push({ ...base, component_purl: p });
  });
  return out;
}
