/**
 * Feeds made by the tests in the published formats: OSV records (validated against the
 * official OSV schema before use), archives of them as OSV publishes (zip) or as tar /
 * tar.gz, hostile archives (traversal names, bombs, lying headers), and CISA KEV catalogs
 * (validated against the KEV schema).
 */
import { crc32, deflateRawSync, gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';
import { expect } from 'vitest';
import { validateAgainst } from '../../src/resources/json-schemas.js';

export interface OsvAffected {
  ecosystem: string;
  name: string;
  purl?: string;
  /** OSV events: each one of introduced, fixed, last_affected or limit. */
  ranges?: { type: 'SEMVER' | 'ECOSYSTEM' | 'GIT'; events: { introduced?: string; fixed?: string; last_affected?: string; limit?: string }[] }[];
  versions?: string[];
}

/** An OSV record; `aliases`, `severity`, `database_specific` as the OSV schema spells them. */
export function osvRecord(r: {
  id: string;
  modified?: string;
  aliases?: string[];
  summary?: string;
  affected: OsvAffected[];
  severity?: { type: string; score: string }[];
  database_specific?: Record<string, unknown>;
  withdrawn?: string;
}): Record<string, unknown> {
  const rec: Record<string, unknown> = {
    schema_version: '1.6.0',
    id: r.id,
    modified: r.modified ?? '2024-01-01T00:00:00Z',
    published: '2023-12-01T00:00:00Z',
    aliases: r.aliases ?? [],
    summary: r.summary ?? `${r.id} summary`,
    affected: r.affected.map((a) => ({
      package: { ecosystem: a.ecosystem, name: a.name, ...(a.purl ? { purl: a.purl } : {}) },
      ...(a.ranges ? { ranges: a.ranges } : {}),
      ...(a.versions ? { versions: a.versions } : {}),
    })),
  };
  if (r.severity) rec['severity'] = r.severity;
  if (r.database_specific) rec['database_specific'] = r.database_specific;
  if (r.withdrawn) rec['withdrawn'] = r.withdrawn;
  expect(validateAgainst('osv', rec), `${r.id} is a valid OSV record`).toBeUndefined();
  return rec;
}

export interface ZipEntry {
  name: string;
  data: Buffer | string;
  /** deflate (default) or store */
  store?: boolean;
  /** declared uncompressed size (a lie, for hostile archives) */
  declaredSize?: number;
}

/** A zip (PKZIP 2.0: local headers, central directory, end record), deflated or stored. */
export function makeZip(entries: ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const data = Buffer.from(e.data);
    const body = e.store ? data : deflateRawSync(data);
    const name = Buffer.from(e.name, 'utf8');
    const crc = crc32(data);
    const size = e.declaredSize ?? data.length;
    const method = e.store ? 0 : 8;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, body);
    centrals.push(central, name);
    offset += local.length + name.length + body.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

/** A tar of the entries (optionally gzipped); `type` lets a test add links. */
export async function makeTar(
  entries: { name: string; data?: Buffer | string; type?: 'file' | 'symlink'; linkname?: string }[],
  gzip = false,
): Promise<Buffer> {
  const p = pack();
  const chunks: Buffer[] = [];
  p.on('data', (c: unknown) => chunks.push(c as Buffer));
  const done = new Promise<void>((r) => p.on('end', () => r()));
  for (const e of entries) {
    if (e.type === 'symlink') p.entry({ name: e.name, type: 'symlink', linkname: e.linkname ?? '/etc/passwd' });
    else p.entry({ name: e.name }, Buffer.from(e.data ?? ''));
  }
  p.finalize();
  await done;
  const tar = Buffer.concat(chunks);
  return gzip ? gzipSync(tar) : tar;
}

/** OSV records as an OSV-style archive: one `<id>.json` per record. */
export function osvZip(records: Record<string, unknown>[]): Buffer {
  return makeZip(records.map((r) => ({ name: `${String(r['id'])}.json`, data: JSON.stringify(r) })));
}

/** A CISA KEV catalog with the given CVEs, valid against the KEV schema. */
export function kevCatalog(entries: { cve: string; dateAdded?: string }[], o: { version?: string; released?: string } = {}): Record<string, unknown> {
  const c = {
    title: 'CISA Catalog of Known Exploited Vulnerabilities',
    catalogVersion: o.version ?? '2024.06.01',
    dateReleased: o.released ?? '2024-06-01T12:00:00.000Z',
    count: entries.length,
    vulnerabilities: entries.map((e) => ({
      cveID: e.cve,
      vendorProject: 'Vendor',
      product: 'Product',
      vulnerabilityName: `${e.cve} name`,
      dateAdded: e.dateAdded ?? '2024-05-01',
      shortDescription: 'description',
      requiredAction: 'Apply updates per vendor instructions.',
      dueDate: '2024-05-22',
      knownRansomwareCampaignUse: 'Unknown',
      notes: '',
      cwes: ['CWE-79'],
    })),
  };
  expect(validateAgainst('kev', c), 'a valid KEV catalog').toBeUndefined();
  return c;
}

/** A CycloneDX 1.5 SBOM with the given purls as components. */
export function cyclonedx(purls: string[], specVersion = '1.5'): string {
  return JSON.stringify({
    bomFormat: 'CycloneDX',
    specVersion,
    version: 1,
    components: purls.map((p, i) => ({
      type: 'library',
      'bom-ref': `c${i}`,
      name: decodeURIComponent(
        p
          .replace(/^pkg:[^/]+\/(?:[^/]+\/)?/, '')
          .replace(/@.*$/, '')
          .replace(/\?.*$/, ''),
      ),
      purl: p,
      licenses: [{ license: { id: 'MIT' } }],
      hashes: [{ alg: 'SHA-256', content: 'a'.repeat(64) }],
    })),
  });
}
