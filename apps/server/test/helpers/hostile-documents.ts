/**
 * Hostile documents for the bad-input property tests: for every media type the server parses
 * itself (SPDX 2.3, CycloneDX SBOM and VEX, OpenVEX, OSV records in zip / tar / tar.gz
 * archives, the KEV catalog), a document its official schema accepts with one of the string
 * fields that reach the database replaced by a text hazard: NUL and the other controls, a
 * lone surrogate, an overlong string (repeated or incompressible), random code units, or
 * nesting deeper than any recursive reader survives. Random trees of keys, which the schemas
 * refuse before a string is ever stored, cannot reach these fields; a valid skeleton can.
 */
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { writeTar } from '@svc/test-kit';
import { cyclonedxDocument, openvexDocument, spdxDocument } from './documents.js';
import { makeZip } from './feeds.js';
import { controlString, deepJson, oversizedString, RawJson, writeJson, type Json } from './hostile-values.js';

type Path = (string | number)[];

interface Skeleton {
  doc: Record<string, unknown>;
  /** String fields that reach the database (indexed ones included). */
  leaves: Path[];
}

const OSV_RECORD: Record<string, unknown> = {
  schema_version: '1.6.0',
  id: 'GHSA-fuzz-fuzz-fuzz',
  modified: '2024-01-01T00:00:00Z',
  published: '2023-12-01T00:00:00Z',
  aliases: ['CVE-2024-0001'],
  summary: 'fuzzed advisory',
  affected: [
    {
      package: { ecosystem: 'npm', name: 'fuzz-pkg' },
      ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '2.0.0' }] }],
      versions: ['1.0.0'],
    },
  ],
  database_specific: { note: 'free-form' },
};

const KEV_CATALOG: Record<string, unknown> = {
  title: 'CISA Catalog of Known Exploited Vulnerabilities',
  catalogVersion: '2024.06.01',
  dateReleased: '2024-06-01T12:00:00.000Z',
  count: 1,
  vulnerabilities: [
    {
      cveID: 'CVE-2024-0001',
      vendorProject: 'Vendor',
      product: 'Product',
      vulnerabilityName: 'name',
      dateAdded: '2024-05-01',
      shortDescription: 'description',
      requiredAction: 'Apply updates per vendor instructions.',
      dueDate: '2024-05-22',
      knownRansomwareCampaignUse: 'Unknown',
      notes: '',
      cwes: ['CWE-79'],
    },
  ],
};

const PURL_REF = { referenceCategory: 'PACKAGE-MANAGER', referenceType: 'purl', referenceLocator: 'pkg:deb/debian/openssl@3.0.11-1?distro=debian-12' };

const SKELETONS: Record<string, Skeleton> = {
  spdx: {
    doc: spdxDocument({ externalRefs: [PURL_REF] }),
    leaves: [
      ['packages', 0, 'name'],
      ['packages', 0, 'versionInfo'],
      ['packages', 0, 'licenseConcluded'],
      ['packages', 0, 'checksums', 0, 'checksumValue'],
      ['packages', 0, 'externalRefs', 0, 'referenceLocator'],
      ['name'],
      ['creationInfo', 'creators', 0],
    ],
  },
  cyclonedx: {
    doc: {
      ...cyclonedxDocument({ licenses: [{ license: { id: 'MIT' } }], hashes: [{ alg: 'SHA-256', content: 'a'.repeat(64) }] }),
      vulnerabilities: [{ id: 'CVE-2021-44228', analysis: { state: 'not_affected', detail: 'not reachable' }, affects: [{ ref: 'c0' }] }],
    },
    leaves: [
      ['components', 0, 'name'],
      ['components', 0, 'version'],
      ['components', 0, 'purl'],
      ['components', 0, 'licenses', 0, 'license', 'id'],
      ['components', 0, 'hashes', 0, 'content'],
      ['vulnerabilities', 0, 'id'],
      ['vulnerabilities', 0, 'analysis', 'detail'],
      ['vulnerabilities', 0, 'affects', 0, 'ref'],
    ],
  },
  openvex: {
    doc: openvexDocument({ impact_statement: 'not reachable' }),
    leaves: [
      ['statements', 0, 'vulnerability', 'name'],
      ['statements', 0, 'impact_statement'],
      ['statements', 0, 'products', 0, 'subcomponents', 0, '@id'],
      ['author'],
    ],
  },
  osv: {
    doc: OSV_RECORD,
    leaves: [['id'], ['aliases', 0], ['summary'], ['affected', 0, 'package', 'name'], ['affected', 0, 'versions', 0], ['database_specific', 'note']],
  },
  kev: {
    doc: KEV_CATALOG,
    leaves: [['catalogVersion'], ['vulnerabilities', 0, 'cveID'], ['vulnerabilities', 0, 'vendorProject'], ['vulnerabilities', 0, 'notes']],
  },
};

/** Which skeleton a media type carries; the KEV catalog is the JSON body of its one route. */
const SKELETON_OF: Record<string, keyof typeof SKELETONS> = {
  'application/spdx+json': 'spdx',
  'application/vnd.cyclonedx+json': 'cyclonedx',
  'application/openvex+json': 'openvex',
  'application/zip': 'osv',
  'application/x-tar': 'osv',
  'application/gzip': 'osv',
  'application/x-gzip': 'osv',
  'application/octet-stream': 'osv',
};

export const KEV_ROUTE = '/api/v1/vuln-feeds/kev';

/** A copy of `doc` with the value at `path` replaced. */
function withLeaf(doc: Json, path: Path, value: Json): Json {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  if (Array.isArray(doc)) return doc.map((v, i) => (i === head ? withLeaf(v, rest, value) : v));
  const o = doc as Record<string, Json>;
  return { ...o, [head!]: withLeaf(o[head!] ?? null, rest, value) };
}

/** Random text a compressor cannot shrink: past what a btree entry holds even compressed. */
const incompressible = fc.integer({ min: 600, max: 4000 }).map((n) => randomBytes(n).toString('hex'));

/** Every text hazard a stored string meets. */
export const textHazard: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: controlString },
  { weight: 1, arbitrary: oversizedString },
  { weight: 1, arbitrary: incompressible },
  { weight: 1, arbitrary: fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 24 }) },
  { weight: 1, arbitrary: deepJson },
);

/** The hazards every field gets in the examples (whatever the random runs pick; they also send repeated overlong text). */
const EXAMPLE_HAZARDS: Json[] = ['a\u0000b', 'lone \ud800', randomBytes(3000).toString('hex'), new RawJson(`${'['.repeat(50_000)}${']'.repeat(50_000)}`)];

/** A bare ustar archive of `files` (no links), written synchronously; names cut to 99 bytes. */
const tarOf = (files: [string, Buffer][]): Buffer =>
  writeTar(
    files.map(([name, data]) => [name.slice(0, 99), data] as const),
    { mtime: 0 },
  );

export interface DocumentBody {
  contentType: string;
  body?: string;
  bytes?: Buffer;
}

/** The request body of `doc` for a media type: JSON text, or an OSV archive of that one record. */
function bodyOf(contentType: string, doc: Json): DocumentBody {
  const text = writeJson(doc);
  if (SKELETON_OF[contentType] !== 'osv') return { contentType, body: text };
  const record = Buffer.from(text, 'utf8');
  if (contentType === 'application/zip' || contentType === 'application/octet-stream')
    return { contentType, bytes: makeZip([{ name: 'fuzz.json', data: record }]) };
  const tar = tarOf([['fuzz.json', record]]);
  return { contentType, bytes: contentType === 'application/x-tar' ? tar : gzipSync(tar) };
}

function skeletonFor(contentType: string, template: string): Skeleton | undefined {
  const name = template === KEV_ROUTE ? 'kev' : SKELETON_OF[contentType];
  return name === undefined ? undefined : SKELETONS[name];
}

/** A valid document of one of `types` with one stored field made hazardous (or none). */
export function hostileDocument(types: string[], template: string): fc.Arbitrary<DocumentBody> | undefined {
  const known = types.filter((t) => skeletonFor(t, template) !== undefined);
  if (known.length === 0) return undefined;
  return fc.constantFrom(...known).chain((contentType) => {
    const s = skeletonFor(contentType, template)!;
    const field = fc
      .tuple(fc.constantFrom(...s.leaves), fc.option(textHazard, { freq: 8, nil: undefined }))
      .map(([leaf, hazard]) => bodyOf(contentType, hazard === undefined ? (s.doc as Json) : withLeaf(s.doc as Json, leaf, hazard)));
    if (SKELETON_OF[contentType] !== 'cyclonedx') return field;
    const nested = fc.integer({ min: 1, max: 40_000 }).map((depth) => ({ contentType, body: nestedComponents(depth) }));
    return fc.oneof({ weight: 6, arbitrary: field }, { weight: 1, arbitrary: nested });
  });
}

/** A CycloneDX BOM whose components nest `depth` levels (the schema allows any depth). */
export function nestedComponents(depth: number): string {
  return `{"bomFormat":"CycloneDX","specVersion":"1.5","components":${'[{"type":"library","name":"n","components":'.repeat(depth)}[]${'}]'.repeat(depth)}}`;
}

/** Media types that are the same bytes on the wire: one set of examples each (the random runs send all). */
const SAME_BYTES: Record<string, string> = { 'application/octet-stream': 'application/zip', 'application/x-gzip': 'application/gzip' };

/** For each media type: the valid document, then each stored field with each hazard. */
export function hostileDocumentExamples(types: string[], template: string): DocumentBody[] {
  const out: DocumentBody[] = [];
  for (const contentType of types) {
    const s = skeletonFor(contentType, template);
    if (s === undefined || (SAME_BYTES[contentType] !== undefined && types.includes(SAME_BYTES[contentType]))) continue;
    out.push(bodyOf(contentType, s.doc as Json));
    for (const leaf of s.leaves) for (const hazard of EXAMPLE_HAZARDS) out.push(bodyOf(contentType, withLeaf(s.doc as Json, leaf, hazard)));
    if (SKELETON_OF[contentType] === 'cyclonedx') for (const depth of [5_000, 30_000]) out.push({ contentType, body: nestedComponents(depth) });
  }
  return out;
}
