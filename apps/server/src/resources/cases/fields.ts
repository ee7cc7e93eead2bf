/**
 * The rules of a case's own fields that a schema cannot state: vulnerability identifiers
 * (normalized so that a case joins the findings of the same CVE or GHSA however it was typed),
 * times that must not lie in the future, and linked records that must exist in the tenant.
 */
import { ServerError } from '../../errors/server-error.js';
import type { Db } from '../../store/tx.js';
import { artifactsByIds, existingDevices, existingGroupIds } from './queries.js';

const CVE = /^CVE-\d{4}-\d{4,19}$/i;
const GHSA = /^GHSA(-[23456789cfghjmpqrvwx]{4}){3}$/i;
// OSV ids and the aliases of other databases: PYSEC-2021-1, RUSTSEC-2021-0001, GO-2022-0001, DSA-5000-1,
// and the private prefixes OSV allows for a vendor's own feed (x_vendor-2026-1)
const OTHER = /^[A-Za-z][A-Za-z0-9_]{1,15}-[A-Za-z0-9][A-Za-z0-9._:-]{0,62}$/;

/** `CVE-2024-3094` upper-case, `GHSA-xxxx-xxxx-xxxx` with a lower-case body (as GitHub writes it), others as given. */
export function normalizeVulnerabilityId(raw: string): string | undefined {
  const s = raw.trim();
  if (CVE.test(s)) return s.toUpperCase();
  if (GHSA.test(s)) return `GHSA-${s.slice(5).toLowerCase()}`;
  if (OTHER.test(s)) return s;
  return undefined;
}

export function normalizeVulnerabilityIds(ids: readonly string[], field = 'vulnerability_ids'): string[] {
  const out: string[] = [];
  ids.forEach((raw, i) => {
    const id = normalizeVulnerabilityId(raw);
    if (id === undefined)
      throw new ServerError(
        'CASE_INVALID',
        `${field}[${i}]: ${JSON.stringify(raw)} is not a vulnerability id (CVE-YYYY-NNNN, GHSA-xxxx-xxxx-xxxx or an OSV id such as PYSEC-2021-1)`,
      );
    if (!out.includes(id)) out.push(id);
  });
  return out;
}

/** A time the caller says something happened: never after `now` (the server's clock). */
export function pastTime(field: string, value: string, now: Date): Date {
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw new ServerError('CASE_INVALID', `${field}: not an RFC 3339 time`);
  if (at.getTime() > now.getTime()) throw new ServerError('CASE_INVALID', `${field}: ${at.toISOString()} is in the future (now ${now.toISOString()})`);
  return at;
}

export interface CaseLinks {
  products: string[];
  artifact_ids: string[];
  vulnerability_ids: string[];
  device_names: string[];
  group_ids: string[];
}

function unique<T>(xs: readonly T[]): T[] {
  return [...new Set(xs)];
}

/** Normalizes the links and checks that every artifact, group and device exists in the tenant (CASE_INVALID naming the first missing one). */
export async function checkLinks(db: Db, tenantId: string, links: CaseLinks): Promise<CaseLinks> {
  const out: CaseLinks = {
    products: unique(links.products),
    artifact_ids: unique(links.artifact_ids.map((id) => id.toLowerCase())),
    vulnerability_ids: normalizeVulnerabilityIds(links.vulnerability_ids),
    device_names: unique(links.device_names),
    group_ids: unique(links.group_ids.map((id) => id.toLowerCase())),
  };
  const artifacts = new Set((await artifactsByIds(db, tenantId, out.artifact_ids)).map((a) => a.id));
  const missingArtifact = out.artifact_ids.findIndex((id) => !artifacts.has(id));
  if (missingArtifact >= 0) throw new ServerError('CASE_INVALID', `artifact_ids[${missingArtifact}]: no artifact ${out.artifact_ids[missingArtifact]}`);
  const groups = await existingGroupIds(db, tenantId, out.group_ids);
  const missingGroup = out.group_ids.findIndex((id) => !groups.has(id));
  if (missingGroup >= 0) throw new ServerError('CASE_INVALID', `group_ids[${missingGroup}]: no group ${out.group_ids[missingGroup]}`);
  const devices = await existingDevices(db, tenantId, out.device_names);
  const missingDevice = out.device_names.findIndex((n) => !devices.has(n));
  if (missingDevice >= 0) throw new ServerError('CASE_INVALID', `device_names[${missingDevice}]: no device ${JSON.stringify(out.device_names[missingDevice])}`);
  return out;
}
