/**
 * SBOM documents (spec §4): CycloneDX 1.4-1.6 JSON and SPDX 2.3 JSON, each validated against
 * its official JSON schema (resources/json-schemas.ts) and bounded by SERVER_LIMITS.sboms, then read
 * into a component index keyed by package URL (vulnerabilities/ecosystems.ts). A CycloneDX
 * 1.4 or 1.5 document is validated with the 1.6 schema: CycloneDX minor versions only add,
 * so a valid 1.4/1.5 document is a valid 1.6 one. SPDX 3.0 (JSON-LD) is refused: no
 * maintained JavaScript parser exists for it (docs/vulnerabilities.md). Pure: no I/O.
 */
import type { Selectable } from 'kysely';
import { PackageURL } from 'packageurl-js';
import { ServerError } from '../../errors/server-error.js';
import { identifierProblem, parseJsonDocument } from '../../input-text.js';
import { validateAgainst } from '../json-schemas.js';
import type { SbomComponentsTable } from '../../store/vuln-tables.js';
import { parsePurl } from '../vulnerabilities/ecosystems.js';
import { SERVER_LIMITS } from '../../limits.js';

export const CYCLONEDX_TYPE = 'application/vnd.cyclonedx+json';
export const SPDX_TYPE = 'application/spdx+json';

export const CYCLONEDX_VERSIONS = ['1.4', '1.5', '1.6'] as const;

/** One entry of the component index: a row of `sbom_components` without its artifact and tenant. */
export type SbomComponent = Omit<Selectable<SbomComponentsTable>, 'tenant_id' | 'artifact_id'>;

export interface ParsedSbom {
  format: 'cyclonedx' | 'spdx';
  contentType: string;
  specVersion: string;
  components: SbomComponent[];
}

const invalid = (message: string) => new ServerError('SBOM_INVALID', message);

/** Validates the SBOM bytes for the declared content type and reads its components. */
export function parseSbom(contentType: string, bytes: Uint8Array): ParsedSbom {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type !== CYCLONEDX_TYPE && type !== SPDX_TYPE) throw invalid(`content-type: must be ${CYCLONEDX_TYPE} or ${SPDX_TYPE}`);
  const o = parseJsonDocument(bytes, SERVER_LIMITS.sboms.maxBytes, invalid);
  return type === CYCLONEDX_TYPE ? parseCycloneDx(o) : parseSpdx(o);
}

/** The index entry of one component; a component without a purl is indexed as `pkg:generic`. */
function indexEntry(
  ordinal: number,
  at: string,
  raw: { purl?: unknown; name: string; version?: unknown; licenses: string[]; hashes: Record<string, string> },
): SbomComponent {
  const version = typeof raw.version === 'string' && raw.version !== '' ? raw.version : null;
  let purl: string =
    typeof raw.purl === 'string' ? raw.purl : new PackageURL('generic', undefined, raw.name, version ?? undefined, undefined, undefined).toString();
  let parsed;
  try {
    parsed = parsePurl(purl);
  } catch (e) {
    throw invalid(`${at}: not a package URL (${(e as Error).message})`);
  }
  purl = parsed.purl;
  const long = identifierProblem(purl) ?? identifierProblem(parsed.identity.key);
  if (long !== undefined) throw invalid(`${at}: package URL ${long}`);
  return {
    ordinal,
    purl,
    package_key: parsed.identity.key,
    ecosystem: parsed.identity.ecosystem,
    release: parsed.identity.release,
    name: parsed.identity.name,
    version: parsed.version ?? version,
    licenses: raw.licenses,
    hashes: raw.hashes,
  };
}

interface CdxComponent {
  name: string;
  version?: string;
  purl?: string;
  licenses?: { license?: { id?: string; name?: string }; expression?: string }[];
  hashes?: { alg: string; content: string }[];
  components?: CdxComponent[];
}

function parseCycloneDx(o: Record<string, unknown>): ParsedSbom {
  if (o['bomFormat'] !== 'CycloneDX') throw invalid('bomFormat: must be "CycloneDX"');
  const spec = o['specVersion'];
  if (typeof spec !== 'string' || !(CYCLONEDX_VERSIONS as readonly string[]).includes(spec))
    throw invalid(`specVersion: must be one of ${CYCLONEDX_VERSIONS.join(', ')}`);
  // the cap first: no schema work for a document that is refused anyway
  let count = 0;
  const countAll = (list: unknown) => {
    if (!Array.isArray(list)) return;
    count += list.length;
    if (count > SERVER_LIMITS.sboms.maxComponents) throw invalid(`components: more than ${SERVER_LIMITS.sboms.maxComponents} components`);
    for (const c of list) countAll((c as { components?: unknown } | null)?.components);
  };
  countAll(o['components']);
  const problem = validateAgainst('cyclonedx-1.6', o);
  if (problem !== undefined) throw invalid(problem);
  const components: SbomComponent[] = [];
  const walk = (list: CdxComponent[] | undefined, at: string) => {
    (list ?? []).forEach((c, i) => {
      const here = `${at}[${i}]`;
      if (components.length >= SERVER_LIMITS.sboms.maxComponents) throw invalid(`components: more than ${SERVER_LIMITS.sboms.maxComponents} components`);
      const licenses = (c.licenses ?? []).map((l) => l.expression ?? l.license?.id ?? l.license?.name).filter((x): x is string => typeof x === 'string');
      const hashes = Object.fromEntries((c.hashes ?? []).map((h) => [h.alg, h.content]));
      components.push(indexEntry(components.length, `${here}.purl`, { purl: c.purl, name: c.name, version: c.version, licenses, hashes }));
      walk(c.components, `${here}.components`);
    });
  };
  walk(o['components'] as CdxComponent[] | undefined, 'components');
  return { format: 'cyclonedx', contentType: CYCLONEDX_TYPE, specVersion: spec, components };
}

interface SpdxPackage {
  name: string;
  versionInfo?: string;
  licenseConcluded?: string;
  licenseDeclared?: string;
  checksums?: { algorithm: string; checksumValue: string }[];
  externalRefs?: { referenceCategory: string; referenceType: string; referenceLocator: string }[];
}

function parseSpdx(o: Record<string, unknown>): ParsedSbom {
  const version = o['spdxVersion'];
  const context = JSON.stringify(o['@context'] ?? '');
  if ((typeof version === 'string' && version.startsWith('SPDX-3')) || context.includes('spdx.org/rdf/3')) {
    throw invalid('spdxVersion: SPDX 3.0 (JSON-LD) is not supported (no maintained parser); attach SPDX 2.3 JSON or CycloneDX');
  }
  if (version !== undefined && version !== 'SPDX-2.3') throw invalid('spdxVersion: must be "SPDX-2.3"');
  if (Array.isArray(o['packages']) && o['packages'].length > SERVER_LIMITS.sboms.maxComponents)
    throw invalid(`packages: more than ${SERVER_LIMITS.sboms.maxComponents} packages`);
  const problem = validateAgainst('spdx-2.3', o);
  if (problem !== undefined) throw invalid(problem);
  const packages = (o['packages'] as SpdxPackage[] | undefined) ?? [];
  const components = packages.map((p, i) => {
    const ref = (p.externalRefs ?? []).find((r) => r.referenceType === 'purl');
    const licenses = [p.licenseConcluded, p.licenseDeclared].filter((l): l is string => typeof l === 'string' && l !== 'NOASSERTION' && l !== 'NONE');
    const hashes = Object.fromEntries((p.checksums ?? []).map((c) => [c.algorithm, c.checksumValue]));
    const at = ref ? `packages[${i}].externalRefs[${p.externalRefs!.indexOf(ref)}].referenceLocator` : `packages[${i}].name`;
    return indexEntry(i, at, { purl: ref?.referenceLocator, name: p.name, version: p.versionInfo, licenses: [...new Set(licenses)], hashes });
  });
  return { format: 'spdx', contentType: SPDX_TYPE, specVersion: 'SPDX-2.3', components };
}
