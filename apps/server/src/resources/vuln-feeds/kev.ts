/**
 * The CISA Known Exploited Vulnerabilities catalog (its official JSON schema), read into
 * entries keyed by CVE. Pure.
 */
import { ServerError } from '../../errors/server-error.js';
import { parseJsonDocument } from '../../input-text.js';
import { validateAgainst } from '../json-schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

export interface KevEntry {
  cveID: string;
  vendorProject: string;
  product: string;
  vulnerabilityName: string;
  dateAdded: string;
  dueDate?: string;
  knownRansomwareCampaignUse?: string;
}

export interface KevCatalog {
  catalogVersion: string;
  dateReleased: Date;
  entries: KevEntry[];
}

/** The catalog, or a 400 naming the first bad path. */
export function readKevCatalog(bytes: Uint8Array): KevCatalog {
  const doc = parseJsonDocument(bytes, SERVER_LIMITS.feeds.maxKevBytes, (m) => new ServerError(m.includes('larger') ? 'FEED_TOO_LARGE' : 'FEED_INVALID', m));
  const problem = validateAgainst('kev', doc);
  if (problem !== undefined) throw new ServerError('FEED_INVALID', problem);
  const c = doc as { catalogVersion: string; dateReleased: string; vulnerabilities: KevEntry[] };
  const released = new Date(c.dateReleased);
  if (Number.isNaN(released.getTime())) throw new ServerError('FEED_INVALID', 'dateReleased: not a date');
  const seen = new Set<string>();
  c.vulnerabilities.forEach((v, i) => {
    if (!/^CVE-\d{4}-\d+$/.test(v.cveID)) throw new ServerError('FEED_INVALID', `vulnerabilities[${i}].cveID: not a CVE id`);
    if (!/^\d{4}-\d{2}-\d{2}$/.test(v.dateAdded)) throw new ServerError('FEED_INVALID', `vulnerabilities[${i}].dateAdded: not a YYYY-MM-DD date`);
    if (seen.has(v.cveID)) throw new ServerError('FEED_INVALID', `vulnerabilities[${i}].cveID: ${v.cveID} appears twice`);
    seen.add(v.cveID);
  });
  return { catalogVersion: c.catalogVersion, dateReleased: released, entries: c.vulnerabilities };
}
