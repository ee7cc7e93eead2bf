/**
 * A product's VEX exports over the API (GET /products/{product}/vex?format=csaf|openvex|cyclonedx):
 * a product with statements in every status (affected with and without an action statement,
 * not_affected with each justification, with a CycloneDX one and with none, fixed by a later
 * release, under_investigation, a statement on a component, an older statement superseded
 * through an alias) exported in the three formats; each document is checked against its
 * official schema (compiled here from apps/server/schemas, byte-identical copies of
 * /work/shared/schemas), the CSAF one also by the BSI/Secvisogram validator (the schema, every
 * mandatory test, every recommended test: the warnings left are the documented ones), and
 * each is read back into (vulnerability, artifact, component, status, justification) rows that
 * must equal the statements in effect. Bad inputs answer a 4xx naming the field.
 */
import { readFileSync } from 'node:fs';
import validate, { type DocumentTest } from '@secvisogram/csaf-validator-lib/validate.js';
import * as mandatory from '@secvisogram/csaf-validator-lib/mandatoryTests.js';
import * as recommended from '@secvisogram/csaf-validator-lib/optionalTests.js';
import { csaf_2_0, csaf_2_0_strict } from '@secvisogram/csaf-validator-lib/schemaTests.js';
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csafSchemaIssues } from '../../../src/resources/case-submissions/csaf.js';
import { parseVex } from '../../../src/resources/vex/documents.js';
import { availableDrivers } from '../../helpers/store.js';
import { cyclonedx, osvRecord, osvZip } from '../../helpers/feeds.js';
import { createReleaseFixture, newAuthorizer, releasePayload, sign, type ReleaseFixture } from '../../fixtures/release-flow.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv | Ajv2020) => void;
const SCHEMAS = new URL('../../../schemas/', import.meta.url);
const schema = (path: string) => JSON.parse(readFileSync(new URL(path, SCHEMAS), 'utf8')) as Record<string, unknown>;
// JSON Schema's `iri`: ajv-formats has none; RFC 3987's shape (a scheme, then no whitespace), which package URLs meet
const IRI = /^[A-Za-z][A-Za-z0-9+.-]*:[^\s<>"{}|\\^`]+$/u;

let openvexSchema: ValidateFunction | undefined;
let cyclonedxSchema: ValidateFunction | undefined;
function schemaErrors(name: 'openvex' | 'cyclonedx', doc: unknown): unknown[] {
  if (name === 'openvex') {
    if (openvexSchema === undefined) {
      const ajv = new Ajv2020({ strict: false, allErrors: true });
      addFormats(ajv);
      ajv.addFormat('iri', IRI);
      openvexSchema = ajv.compile(schema('openvex/openvex_json_schema.json'));
    }
    return openvexSchema(doc) ? [] : (openvexSchema.errors ?? []);
  }
  if (cyclonedxSchema === undefined) {
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addFormat('iri-reference', IRI);
    ajv.addFormat('idn-email', /^[^\s@]+@[^\s@]+$/u);
    ajv.addSchema(schema('cyclonedx/spdx.schema.json'));
    ajv.addSchema(schema('cyclonedx/jsf-0.82.schema.json'));
    cyclonedxSchema = ajv.compile(schema('cyclonedx/bom-1.6.schema.json'));
  }
  return cyclonedxSchema(doc) ? [] : (cyclonedxSchema.errors ?? []);
}

const MANDATORY = Object.values<DocumentTest>(mandatory);
const RECOMMENDED = Object.values<DocumentTest>(recommended);

/** Every finding of the validator: `<test> <error|warning|info> <path>: <message>`. */
async function csafFindings(doc: unknown, tests: DocumentTest[]): Promise<string[]> {
  const result = await validate(tests, doc);
  expect(result.tests.map((t) => t.name)).toEqual(tests.map((t) => t.name));
  return result.tests.flatMap((t) =>
    (['errors', 'warnings', 'infos'] as const).flatMap((kind) => t[kind].map((x) => `${t.name} ${kind.slice(0, -1)} ${x.instancePath}: ${x.message}`)),
  );
}

const range = (...events: Record<string, string>[]) => [{ type: 'SEMVER' as const, events }];
const FEED = [
  osvRecord({
    id: 'GHSA-35jh-r3h4-6jhm',
    aliases: ['CVE-2021-23337'],
    summary: 'Command injection in lodash',
    affected: [{ ecosystem: 'npm', name: 'lodash', ranges: range({ introduced: '0' }, { fixed: '4.17.21' }) }],
  }),
  osvRecord({
    id: 'GHSA-jfh8-c2jp-5v3q',
    aliases: ['CVE-2021-44228'],
    summary: 'Remote code injection in Log4j',
    affected: [
      {
        ecosystem: 'Maven',
        name: 'org.apache.logging.log4j:log4j-core',
        ranges: [{ type: 'ECOSYSTEM', events: [{ introduced: '2.0-beta9' }, { fixed: '2.15.0' }] }],
      },
    ],
  }),
  osvRecord({ id: 'OSV-2022-1', affected: [{ ecosystem: 'OSS-Fuzz', name: 'zlib', purl: 'pkg:generic/zlib', versions: ['1.2.11'] }] }),
];
const ZLIB = 'pkg:generic/zlib@1.2.11';
const JUSTIFICATIONS = [
  'component_not_present',
  'vulnerable_code_not_present',
  'vulnerable_code_not_in_execute_path',
  'vulnerable_code_cannot_be_controlled_by_adversary',
  'inline_mitigations_already_exist',
] as const;
/** The OpenVEX justifications as CycloneDX writes them (docs/vulnerabilities.md, "VEX exports"). */
const AS_CYCLONEDX: Record<string, string> = {
  component_not_present: 'code_not_present',
  vulnerable_code_not_present: 'code_not_present',
  vulnerable_code_not_in_execute_path: 'code_not_reachable',
  vulnerable_code_cannot_be_controlled_by_adversary: 'requires_environment',
  inline_mitigations_already_exist: 'protected_by_mitigating_control',
};

interface Row {
  vulnerability: string;
  artifact: string;
  component: string | null;
  status: string;
  justification: string | null;
}
const sortRows = (rows: Row[]) =>
  [...rows].sort((a, b) =>
    JSON.stringify([a.vulnerability, a.artifact, a.component ?? '']).localeCompare(JSON.stringify([b.vulnerability, b.artifact, b.component ?? ''])),
  );

/** The CSAF document read back: each product status of each vulnerability, the artifact (and component) it names, its VEX flag. */
function csafRows(doc: any): Row[] {
  const names = new Map<string, { artifact: string; component: string | null }>();
  const walk = (branches: any[]) => {
    for (const b of branches ?? []) {
      if (b.product) names.set(b.product.product_id, { artifact: b.product.name.replace(' ', '@'), component: null });
      walk(b.branches);
    }
  };
  walk(doc.product_tree.branches);
  const purls = new Map<string, string>((doc.product_tree.full_product_names ?? []).map((p: any) => [p.product_id, p.product_identification_helper.purl]));
  for (const r of doc.product_tree.relationships ?? [])
    names.set(r.full_product_name.product_id, { artifact: names.get(r.relates_to_product_reference)!.artifact, component: purls.get(r.product_reference)! });
  const STATUS: Record<string, string> = {
    known_affected: 'affected',
    known_not_affected: 'not_affected',
    fixed: 'fixed',
    under_investigation: 'under_investigation',
  };
  return doc.vulnerabilities.flatMap((v: any) =>
    Object.entries(v.product_status).flatMap(([field, ids]) =>
      (ids as string[]).map((id) => ({
        vulnerability: v.cve ?? v.ids[0].text,
        ...names.get(id)!,
        status: STATUS[field]!,
        justification: (v.flags ?? []).find((fl: any) => fl.product_ids.includes(id))?.label ?? null,
      })),
    ),
  );
}

function openvexRows(doc: any, artifactOf: (purl: string) => string): Row[] {
  return doc.statements.flatMap((s: any) =>
    s.products.flatMap((p: any) =>
      (p.subcomponents ?? [null]).map((c: any) => ({
        vulnerability: s.vulnerability.name,
        artifact: artifactOf(p['@id']),
        component: c === null ? null : c['@id'],
        status: s.status,
        justification: s.justification ?? null,
      })),
    ),
  );
}

function cyclonedxRows(doc: any): Row[] {
  const refs = new Map<string, { artifact: string; component: string | null }>();
  for (const a of doc.components) {
    refs.set(a['bom-ref'], { artifact: `${a.name}@${a.version}`, component: null });
    for (const c of a.components ?? []) refs.set(c['bom-ref'], { artifact: `${a.name}@${a.version}`, component: c.purl });
  }
  const STATE: Record<string, string> = { exploitable: 'affected', not_affected: 'not_affected', resolved: 'fixed', in_triage: 'under_investigation' };
  return doc.vulnerabilities.flatMap((v: any) =>
    v.affects.map((a: any) => ({
      vulnerability: v.id,
      ...refs.get(a.ref)!,
      status: STATE[v.analysis.state]!,
      justification: v.analysis.justification ?? null,
    })),
  );
}

describe.each(availableDrivers())('VEX exports of a product on %s', (driver) => {
  let f: ReleaseFixture;
  let fw1: any;
  let fw2: any;
  let agent: any;
  let rel1: any;
  let rel2: any;
  /** the statements in effect for edge-gateway, OpenVEX justifications */
  const expected: Row[] = [];
  const get = (url: string, headers = f.admin) => f.t.app.inject({ method: 'GET', url, headers });
  const exportOf = async (product: string, format: string) => {
    const res = await get(`/api/v1/products/${product}/vex?format=${format}`);
    expect(res.statusCode, res.body).toBe(200);
    return { res, doc: JSON.parse(res.body) };
  };
  const vex = async (artifactId: string, doc: unknown, type: 'application/openvex+json' | 'application/vnd.cyclonedx+json') => {
    const res = await f.t.app.inject({
      method: 'POST',
      url: `/api/v1/artifacts/${artifactId}/vex`,
      headers: { ...f.admin, 'content-type': type },
      payload: JSON.stringify(doc),
    });
    expect(res.statusCode, res.body).toBe(201);
    f.t.clock.advance(3_600_000);
  };
  const openvex = (timestamp: string, statements: Record<string, unknown>[]) => ({
    '@context': 'https://openvex.dev/ns/v0.2.0',
    '@id': `https://example.test/vex/${timestamp}`,
    author: 'PSIRT',
    timestamp,
    version: 1,
    statements,
  });
  const stmt = (name: string, status: string, extra: Record<string, unknown> = {}) => ({
    vulnerability: { name },
    products: [{ '@id': 'pkg:generic/firmware' }],
    status,
    ...extra,
  });

  beforeAll(async () => {
    f = await createReleaseFixture(driver);
    f.t.clock.set(new Date('2026-03-01T09:00:00Z'));
    const zip = await f.t.app.inject({
      method: 'POST',
      url: '/api/v1/vuln-feeds/osv?source=test',
      headers: { ...f.admin, 'content-type': 'application/zip' },
      payload: osvZip(FEED),
    });
    expect(zip.statusCode, zip.body).toBeLessThan(300);
    const upload = async (name: string, version: string, kind: string, purls: string[]) => {
      const a = (await f.upload({ name, version, kind, bytes: `${name} ${version}` })).body;
      const sbom = await f.t.app.inject({
        method: 'PUT',
        url: `/api/v1/artifacts/${a.id}/sbom`,
        headers: { ...f.admin, 'content-type': 'application/vnd.cyclonedx+json' },
        payload: cyclonedx(purls),
      });
      expect(sbom.statusCode, sbom.body).toBe(200);
      return a;
    };
    fw1 = await upload('fw', '1.0.0', 'config', ['pkg:npm/lodash@4.17.20', 'pkg:maven/org.apache.logging.log4j/log4j-core@2.14.1', ZLIB]);
    fw2 = await upload('fw', '2.0.0', 'config', ['pkg:npm/lodash@4.17.21', 'pkg:maven/org.apache.logging.log4j/log4j-core@2.17.1']);
    agent = await upload('agent', '1.0.0', 'service-binary', [ZLIB]);
    const other = await upload('other-app', '1.0.0', 'config', []);
    await upload('idle', '1.0.0', 'config', []);

    await f.device('edge-1');
    const group = (await f.api('POST', '/api/v1/groups', { name: 'fleet', members: ['edge-1'] })).body;
    const auth = newAuthorizer();
    await f.api('POST', '/api/v1/authorizer-keys', { name: 'k', public_key_pem: auth.pem });
    const release = async (product: string, version: string, artifacts: any[]) => {
      const res = await f.api('POST', '/api/v1/releases', {
        envelope: sign(releasePayload({ tenant: f.t.tenantId, product, version, artifacts, group }), auth.key),
        expected_product: product,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      f.t.clock.advance(86_400_000);
      return res.body;
    };
    rel1 = await release('edge-gateway', '1.0.0', [fw1, agent]);
    rel2 = await release('edge-gateway', '2.0.0', [fw2, agent]);
    await release('other', '1.0.0', [other]);
    await release('quiet', '1.0.0', [(await f.upload({ name: 'quiet-app', version: '1.0.0', kind: 'config', bytes: 'quiet' })).body]);

    // fw 1.0.0: an older statement through the GHSA alias, superseded by the CVE's
    await vex(fw1.id, openvex('2024-01-01T00:00:00Z', [stmt('GHSA-35jh-r3h4-6jhm', 'under_investigation')]), 'application/openvex+json');
    await vex(
      fw1.id,
      openvex('2024-02-01T00:00:00Z', [
        stmt('CVE-2021-23337', 'affected', { action_statement: 'Restrict access to the admin UI.' }),
        stmt('CVE-2021-44228', 'affected', { action_statement: 'update' }),
        ...JUSTIFICATIONS.map((j, i) => stmt(`CVE-2026-100${i + 1}`, 'not_affected', { justification: j })),
        {
          ...stmt('OSV-2022-1', 'not_affected', { justification: 'vulnerable_code_not_in_execute_path', impact_statement: 'The inflate path is never used.' }),
          products: [{ '@id': 'pkg:generic/firmware', subcomponents: [{ '@id': ZLIB }] }],
        },
      ]),
      'application/openvex+json',
    );
    // fw 2.0.0 carries the fixes
    await vex(fw2.id, openvex('2024-03-01T00:00:00Z', [stmt('CVE-2021-23337', 'fixed'), stmt('GHSA-jfh8-c2jp-5v3q', 'fixed')]), 'application/openvex+json');
    // the agent: CycloneDX VEX
    await vex(
      agent.id,
      {
        bomFormat: 'CycloneDX',
        specVersion: '1.6',
        version: 1,
        metadata: { timestamp: '2024-04-01T00:00:00Z' },
        vulnerabilities: [
          { id: 'CVE-2026-2000', analysis: { state: 'in_triage' } },
          { id: 'CVE-2026-2001', analysis: { state: 'not_affected', justification: 'protected_at_runtime', detail: 'Runs in a sandbox.' } },
          { id: 'CVE-2026-2002', analysis: { state: 'false_positive' } },
        ],
      },
      'application/vnd.cyclonedx+json',
    );
    await vex(other.id, openvex('2024-05-01T00:00:00Z', [stmt('CVE-2026-3000', 'affected', { action_statement: 'Unplug it.' })]), 'application/openvex+json');
    await vex(other.id, openvex('2024-05-02T00:00:00Z', [stmt('CVE-2026-3001', 'affected', { action_statement: 'will_not_fix' })]), 'application/openvex+json');

    expected.push(
      { vulnerability: 'CVE-2021-23337', artifact: 'fw@1.0.0', component: null, status: 'affected', justification: null },
      { vulnerability: 'CVE-2021-23337', artifact: 'fw@2.0.0', component: null, status: 'fixed', justification: null },
      { vulnerability: 'CVE-2021-44228', artifact: 'fw@1.0.0', component: null, status: 'affected', justification: null },
      { vulnerability: 'CVE-2021-44228', artifact: 'fw@2.0.0', component: null, status: 'fixed', justification: null },
      ...JUSTIFICATIONS.map((j, i) => ({
        vulnerability: `CVE-2026-100${i + 1}`,
        artifact: 'fw@1.0.0',
        component: null,
        status: 'not_affected',
        justification: j,
      })),
      { vulnerability: 'OSV-2022-1', artifact: 'fw@1.0.0', component: ZLIB, status: 'not_affected', justification: 'vulnerable_code_not_in_execute_path' },
      { vulnerability: 'CVE-2026-2000', artifact: 'agent@1.0.0', component: null, status: 'under_investigation', justification: null },
      { vulnerability: 'CVE-2026-2001', artifact: 'agent@1.0.0', component: null, status: 'not_affected', justification: 'inline_mitigations_already_exist' },
      { vulnerability: 'CVE-2026-2002', artifact: 'agent@1.0.0', component: null, status: 'not_affected', justification: null },
    );
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('CSAF 2.0 csaf_vex: valid, every mandatory test passes, the recommended ones leave the documented warnings only; the content is the statements in effect', async () => {
    const { res, doc } = await exportOf('edge-gateway', 'csaf');
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['content-disposition']).toBe('attachment; filename="svc-vex-edge-gateway.json"');
    expect(csafSchemaIssues(doc)).toEqual([]);
    expect(await csafFindings(doc, [csaf_2_0, csaf_2_0_strict, ...MANDATORY])).toEqual([]);
    // the warnings left (docs/vulnerabilities.md, "VEX exports"): 6.2.3, no CVSS score for an affected product (a finding keeps
    // the score, not the vector CSAF needs, and a statement-only vulnerability has neither); 6.2.16, a component of an artifact
    // (a relationship) has no identifier of its own
    expect(await csafFindings(doc, RECOMMENDED)).toEqual([
      ...(doc.product_tree.relationships as any[]).map(
        (_, i) => `optionalTest_6_2_16 warning /product_tree/relationships/${i}/full_product_name: missing product identification helper`,
      ),
      ...(doc.vulnerabilities as any[]).flatMap((v, i) =>
        ((v.product_status.known_affected ?? []) as string[]).map(
          (_, j) => `optionalTest_6_2_3 warning /vulnerabilities/${i}/product_status/known_affected/${j}: missing score`,
        ),
      ),
    ]);
    expect(doc.product_tree.relationships).toHaveLength(1);
    expect(doc.document.references).toEqual([
      { category: 'self', summary: 'Canonical URL of this document', url: 'https://localhost:80/.well-known/csaf/white/2026/svc-vex-edge-gateway.json' },
    ]);
    expect(sortRows(csafRows(doc))).toEqual(sortRows(expected));
    expect(doc.document).toMatchObject({ category: 'csaf_vex', publisher: { category: 'vendor' }, tracking: { id: 'SVC-VEX-edge-gateway', version: '4' } });
    // one revision per VEX document attached to an artifact of the product (other products' documents are not)
    expect(doc.document.tracking.revision_history.map((r: any) => r.summary.replace(/sha256:[0-9a-f]{64}/, 'D'))).toEqual([
      'VEX document D attached to fw 1.0.0 (1 statement).',
      'VEX document D attached to fw 1.0.0 (8 statements).',
      'VEX document D attached to fw 2.0.0 (2 statements).',
      'VEX document D attached to agent 1.0.0 (3 statements).',
    ]);
    const byKey = new Map((doc.vulnerabilities as any[]).map((v) => [v.cve ?? v.ids[0].text, v]));
    // the GHSA statement and the CVE one are one vulnerability; the finding gives its ids and summary
    expect(byKey.get('CVE-2021-23337')).toMatchObject({
      ids: [{ system_name: 'GHSA', text: 'GHSA-35jh-r3h4-6jhm' }],
      notes: [{ text: 'Command injection in lodash' }],
    });
    // fixed: the release that first ships the fixed artifact; affected: update to it, and the action statement
    const remediations = (key: string) => byKey.get(key).remediations.map((r: any) => [r.category, r.details, r.product_ids]);
    expect(remediations('CVE-2021-23337')).toEqual([
      ['vendor_fix', `Fixed in edge-gateway 2.0.0 (release ${rel2.id}).`, [`CSAFPID-A-${fw2.id}`]],
      ['vendor_fix', `Update to edge-gateway 2.0.0 (release ${rel2.id}), which contains the fix.`, [`CSAFPID-A-${fw1.id}`]],
      ['mitigation', 'Restrict access to the admin UI.', [`CSAFPID-A-${fw1.id}`]],
    ]);
    expect(remediations('CVE-2021-44228')[2]).toEqual(['vendor_fix', 'update', [`CSAFPID-A-${fw1.id}`]]);
    expect(byKey.get('CVE-2021-23337').remediations[0].date).toBe(rel2.created_at);
    // not affected: a flag per justification; an impact statement where there is one, or where no flag can say it
    expect(byKey.get('OSV-2022-1').threats).toEqual([
      { category: 'impact', details: 'The inflate path is never used.', product_ids: [expect.stringMatching(/-C-1$/)] },
    ]);
    expect(byKey.get('CVE-2026-2002').threats).toEqual([{ category: 'impact', details: 'Not affected.', product_ids: [`CSAFPID-A-${agent.id}`] }]);
    expect(byKey.get('CVE-2026-2002').flags).toBeUndefined();
    // the artifacts are identified by their SHA-256; an artifact no statement names is not in the tree
    const fw = doc.product_tree.branches[0].branches[0];
    expect(fw).toMatchObject({ category: 'product_family', name: 'edge-gateway' });
    expect(JSON.stringify(doc.product_tree)).toContain(fw1.digest.slice('sha256:'.length));
    expect(JSON.stringify(doc)).not.toContain('other-app');
  });

  it('OpenVEX 0.2.0: valid against its schema, read back by the server itself; the content is the statements in effect', async () => {
    const { res, doc } = await exportOf('edge-gateway', 'openvex');
    expect(res.headers['content-type']).toMatch(/^application\/openvex\+json/);
    expect(res.headers['content-disposition']).toBe('attachment; filename="edge-gateway.openvex.json"');
    expect(schemaErrors('openvex', doc)).toEqual([]);
    const purls = new Map<string, string>();
    for (const a of [fw1, fw2, agent])
      purls.set(`pkg:generic/${a.name}@${a.version}?checksum=sha256:${a.digest.slice('sha256:'.length)}`, `${a.name}@${a.version}`);
    expect(sortRows(openvexRows(doc, (p) => purls.get(decodeURIComponent(p)) ?? p))).toEqual(sortRows(expected));
    const one = (name: string, artifact: any) =>
      doc.statements.find((s: any) => s.vulnerability.name === name && s.products[0].hashes['sha-256'] === artifact.digest.slice('sha256:'.length));
    expect(one('CVE-2021-23337', fw1)).toMatchObject({
      vulnerability: { aliases: ['GHSA-35jh-r3h4-6jhm'], description: 'Command injection in lodash' },
      action_statement: `Restrict access to the admin UI. Update to edge-gateway 2.0.0 (release ${rel2.id}), which contains the fix.`,
      timestamp: '2024-02-01T00:00:00.000Z',
    });
    expect(one('CVE-2021-23337', fw2)).toMatchObject({ status: 'fixed', status_notes: `Fixed in edge-gateway 2.0.0 (release ${rel2.id}).` });
    expect(one('CVE-2026-2002', agent)).toMatchObject({ status: 'not_affected', impact_statement: 'Not affected.' });
    expect(doc).toMatchObject({ version: 4, timestamp: '2026-03-05T09:00:00.000Z', last_updated: '2026-03-05T12:00:00.000Z' });
    // the server's own reader takes it (the statements, their components)
    const parsed = parseVex('application/openvex+json', Buffer.from(res.body), new Date());
    expect(parsed.statements.map((s) => [s.vuln_id, s.component_purl, s.status, s.justification])).toEqual(
      doc.statements.map((s: any) => [s.vulnerability.name, s.products[0].subcomponents?.[0]['@id'] ?? null, s.status, s.justification ?? null]),
    );
  });

  it('CycloneDX 1.6 VEX: valid against its schema, read back by the server itself; the content is the statements in effect', async () => {
    const { res, doc } = await exportOf('edge-gateway', 'cyclonedx');
    expect(res.headers['content-type']).toMatch(/^application\/vnd\.cyclonedx\+json; version="?1\.6"?;/);
    expect(res.headers['content-disposition']).toBe('attachment; filename="edge-gateway.cdx.json"');
    expect(schemaErrors('cyclonedx', doc)).toEqual([]);
    const cdxExpected = expected.map((r) => ({ ...r, justification: r.justification === null ? null : AS_CYCLONEDX[r.justification]! }));
    // the agent's CycloneDX justification is kept as written
    cdxExpected.find((r) => r.vulnerability === 'CVE-2026-2001')!.justification = 'protected_at_runtime';
    expect(sortRows(cyclonedxRows(doc))).toEqual(sortRows(cdxExpected));
    const v = (id: string, state: string) => doc.vulnerabilities.find((x: any) => x.id === id && x.analysis.state === state);
    expect(v('CVE-2021-23337', 'exploitable')).toMatchObject({
      references: [{ id: 'GHSA-35jh-r3h4-6jhm', source: { name: 'GHSA' } }],
      analysis: { response: ['update'] },
      recommendation: `Restrict access to the admin UI. Update to edge-gateway 2.0.0 (release ${rel2.id}), which contains the fix.`,
    });
    expect(v('CVE-2021-23337', 'resolved').analysis.detail).toBe(`Fixed in edge-gateway 2.0.0 (release ${rel2.id}).`);
    expect(v('CVE-2026-2001', 'not_affected').analysis).toMatchObject({ justification: 'protected_at_runtime', detail: 'Runs in a sandbox.' });
    // the same product exports the same BOM serial number, its version counting the documents
    expect(doc.serialNumber).toBe((await exportOf('edge-gateway', 'cyclonedx')).doc.serialNumber);
    expect(doc.version).toBe(4);
    const parsed = parseVex('application/vnd.cyclonedx+json', Buffer.from(res.body), new Date());
    expect(new Set(parsed.statements.map((s) => `${s.vuln_id} ${s.status} ${s.component_purl}`))).toEqual(
      new Set(expected.map((r) => `${r.vulnerability} ${r.status} ${r.component}`)),
    );
  });

  it('an affected artifact with no fix: the action statement or "none available"; every format stays valid', async () => {
    const csaf = (await exportOf('other', 'csaf')).doc;
    expect(await csafFindings(csaf, [csaf_2_0, csaf_2_0_strict, ...MANDATORY])).toEqual([]);
    expect(csaf.vulnerabilities.map((v: any) => [v.cve, v.remediations.map((r: any) => [r.category, r.details])])).toEqual([
      ['CVE-2026-3000', [['mitigation', 'Unplug it.']]],
      ['CVE-2026-3001', [['no_fix_planned', 'will_not_fix']]],
    ]);
    expect(schemaErrors('openvex', (await exportOf('other', 'openvex')).doc)).toEqual([]);
    const cdx = (await exportOf('other', 'cyclonedx')).doc;
    expect(schemaErrors('cyclonedx', cdx)).toEqual([]);
    expect(cdx.vulnerabilities.map((v: any) => [v.id, v.analysis.response ?? null, v.recommendation ?? null])).toEqual([
      ['CVE-2026-3000', null, 'Unplug it.'],
      ['CVE-2026-3001', ['will_not_fix'], null],
    ]);
  });

  it('bad inputs: an unknown format or a malformed product is a 400 naming the field; an unknown product or one without statements a 404 naming it', async () => {
    const bad = await get('/api/v1/products/edge-gateway/vex?format=pdf');
    expect(bad.statusCode).toBe(400);
    // the router's schema check, as for every enumerated query field
    expect(JSON.parse(bad.body).error).toBe('querystring.format: must be equal to constant');
    const malformed = await get('/api/v1/products/Edge%20Gateway/vex');
    expect(malformed.statusCode).toBe(400);
    expect(JSON.parse(malformed.body).error).toBe('params.product: must match pattern "^[a-z0-9][a-z0-9._-]{0,63}$"');
    const unknown = await get('/api/v1/products/nothing/vex?format=openvex');
    expect(unknown.statusCode).toBe(404);
    expect(JSON.parse(unknown.body).error).toBe('product: no release of product nothing');
    const quiet = await get('/api/v1/products/quiet/vex');
    expect(quiet.statusCode).toBe(404);
    expect(JSON.parse(quiet.body).error).toBe('product: no VEX statement on the artifacts of the releases of quiet');
  });

  it('csaf is the default format; a viewer may export; the artifact VEX list names the products that export it', async () => {
    const viewer = await f.t.loginAs('viewer');
    const res = await get('/api/v1/products/edge-gateway/vex', viewer);
    expect(res.statusCode, res.body).toBe(200);
    expect(JSON.parse(res.body).document.category).toBe('csaf_vex');
    expect((await f.api('GET', `/api/v1/artifacts/${agent.id}/vex`)).body.products).toEqual(['edge-gateway']);
    expect((await f.api('GET', `/api/v1/artifacts/${fw1.id}/vex`)).body.products).toEqual(['edge-gateway']);
    expect(rel1.product).toBe('edge-gateway');
  });
});
