/**
 * SBOM documents (spec §4): two formats, each checked for the minimal fields that make it that
 * format. Severities of CycloneDX `vulnerabilities[].ratings[].severity` are extracted once at
 * attach time so the artifact list can filter on them with an index-friendly array column.
 * Pure: no I/O.
 */
import { ServerError } from '../../errors/server-error.js';

export const CYCLONEDX_TYPE = 'application/vnd.cyclonedx+json';
export const SPDX_TYPE = 'application/spdx+json';
export const MAX_SBOM_BYTES = 16 * 1024 * 1024;
// CycloneDX 1.4+ severity vocabulary
export const SEVERITIES = ['critical', 'high', 'medium', 'low', 'info', 'none', 'unknown'] as const;

export interface ParsedSbom {
  format: 'cyclonedx' | 'spdx';
  contentType: string;
  severities: string[];
}

/** Validates the SBOM bytes for the declared content type, naming the missing field. */
export function parseSbom(contentType: string, bytes: Uint8Array): ParsedSbom {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type !== CYCLONEDX_TYPE && type !== SPDX_TYPE) {
    throw new ServerError('SBOM_INVALID', `content-type: must be ${CYCLONEDX_TYPE} or ${SPDX_TYPE}`);
  }
  if (bytes.length > MAX_SBOM_BYTES) throw new ServerError('SBOM_INVALID', `body: SBOM larger than ${MAX_SBOM_BYTES} bytes`);
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw new ServerError('SBOM_INVALID', 'body: not UTF-8 JSON');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new ServerError('SBOM_INVALID', 'body: must be a JSON object');
  const o = doc as Record<string, unknown>;
  if (type === CYCLONEDX_TYPE) {
    if (o['bomFormat'] !== 'CycloneDX') throw new ServerError('SBOM_INVALID', 'bomFormat: must be "CycloneDX"');
    if (typeof o['specVersion'] !== 'string' || !/^1\.\d+$/.test(o['specVersion'])) throw new ServerError('SBOM_INVALID', 'specVersion: must be a CycloneDX 1.x version string');
    if (o['components'] !== undefined && !Array.isArray(o['components'])) throw new ServerError('SBOM_INVALID', 'components: must be an array');
    const severities = new Set<string>();
    const vulns = o['vulnerabilities'];
    if (vulns !== undefined) {
      if (!Array.isArray(vulns)) throw new ServerError('SBOM_INVALID', 'vulnerabilities: must be an array');
      vulns.forEach((v: unknown, i) => {
        const ratings = (v as { ratings?: unknown } | null)?.ratings;
        if (ratings === undefined) return;
        if (!Array.isArray(ratings)) throw new ServerError('SBOM_INVALID', `vulnerabilities[${i}].ratings: must be an array`);
        ratings.forEach((r: unknown, j) => {
          const s = (r as { severity?: unknown } | null)?.severity;
          if (s === undefined) return;
          if (typeof s !== 'string' || !(SEVERITIES as readonly string[]).includes(s)) {
            throw new ServerError('SBOM_INVALID', `vulnerabilities[${i}].ratings[${j}].severity: must be one of ${SEVERITIES.join(', ')}`);
          }
          severities.add(s);
        });
      });
    }
    return { format: 'cyclonedx', contentType: CYCLONEDX_TYPE, severities: [...severities].sort() };
  }
  // SPDX 2.x JSON: the document-level fields every SPDX document has
  if (typeof o['spdxVersion'] !== 'string' || !o['spdxVersion'].startsWith('SPDX-')) throw new ServerError('SBOM_INVALID', 'spdxVersion: must be a string like "SPDX-2.3"');
  if (o['SPDXID'] !== 'SPDXRef-DOCUMENT') throw new ServerError('SBOM_INVALID', 'SPDXID: must be "SPDXRef-DOCUMENT"');
  if (typeof o['name'] !== 'string') throw new ServerError('SBOM_INVALID', 'name: is required');
  if (typeof o['dataLicense'] !== 'string') throw new ServerError('SBOM_INVALID', 'dataLicense: is required');
  if (typeof o['documentNamespace'] !== 'string') throw new ServerError('SBOM_INVALID', 'documentNamespace: is required');
  const ci = o['creationInfo'] as { created?: unknown; creators?: unknown } | undefined;
  if (typeof ci !== 'object' || ci === null || typeof ci.created !== 'string' || !Array.isArray(ci.creators)) {
    throw new ServerError('SBOM_INVALID', 'creationInfo: must have created and creators');
  }
  return { format: 'spdx', contentType: SPDX_TYPE, severities: [] };
}
