import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kevCatalog, makeTar, osvRecord, osvZip } from '../helpers/feeds.js';
import { cyclonedxDocument, openvexDocument, spdxDocument } from '../helpers/documents.js';
import { availableDrivers } from '../helpers/store.js';
import { createReleaseFixture, type ReleaseFixture } from '../fixtures/release-flow.js';

/**
 * The text rule of docs/server.md "Input rules" on the documents the server parses itself
 * (SBOMs, VEX, OSV records, the KEV catalog): a NUL, another control character or a lone
 * surrogate anywhere in a document is 400 naming the document's field path (an OSV record
 * holding one is skipped with that reason), and an identifier longer than the index can
 * hold is 400 too. Never a 500, on either driver, for admin and operator alike.
 */
const SPDX = 'application/spdx+json';
const CDX = 'application/vnd.cyclonedx+json';
const OPENVEX = 'application/openvex+json';
const NUL = 'must not contain control characters (U+0000 at index 1)';
const SURROGATE = 'must be well-formed Unicode (lone surrogate U+D800 at index 1)';

/** JSON text with `\u0000` and `\ud800` written as the escapes a client sends. */
const wire = (doc: unknown) => JSON.stringify(doc);

describe.each(availableDrivers())('document text on %s', (driver) => {
  let f: ReleaseFixture;
  let artifact: string;
  let operator: Record<string, string>;

  beforeAll(async () => {
    f = await createReleaseFixture(driver);
    artifact = (await f.upload({ name: 'doc-text', version: '1.0.0', kind: 'config', bytes: 'x' })).body.id;
    operator = await f.t.loginAs('operator');
  });
  afterAll(async () => {
    await f?.dispose();
  });

  const send = async (method: 'PUT' | 'POST', url: string, type: string, payload: string | Buffer, headers: Record<string, string>) => {
    const res = await f.t.app.inject({ method, url, headers: { ...headers, 'content-type': type }, payload });
    return { status: res.statusCode, body: res.json<Record<string, unknown>>() };
  };

  it.each([
    ['admin', () => f.admin],
    ['operator', () => operator],
  ])('an SPDX 2.3 SBOM with NUL or a lone surrogate in packages[0].name or versionInfo is 400 naming the field (%s)', async (_role, who) => {
    const put = (doc: unknown) => send('PUT', `/api/v1/artifacts/${artifact}/sbom`, SPDX, wire(doc), who());
    for (const [field, value, problem] of [
      ['name', 'a\u0000b', NUL],
      ['name', 'a\ud800b', SURROGATE],
      ['versionInfo', '1\u00002', NUL],
      ['versionInfo', '1\ud800', SURROGATE],
    ] as const) {
      expect(await put(spdxDocument({ [field]: value })), `${field} ${JSON.stringify(value)}`).toEqual({
        status: 400,
        body: { error: `packages[0].${field}: ${problem}` },
      });
    }
    // nothing was attached; a clean document still is
    expect((await put(spdxDocument())).status).toBe(200);
  });

  it('CycloneDX SBOMs and VEX, OpenVEX: the same rule, the document path named', async () => {
    const sbom = (doc: unknown) => send('PUT', `/api/v1/artifacts/${artifact}/sbom`, CDX, wire(doc), f.admin);
    const vex = (doc: unknown, type: string) => send('POST', `/api/v1/artifacts/${artifact}/vex`, type, wire(doc), f.admin);
    expect(await sbom(cyclonedxDocument({ version: '1\u00002' }))).toEqual({ status: 400, body: { error: `components[0].version: ${NUL}` } });
    expect(await sbom(cyclonedxDocument({ name: 'a\ud800' }))).toEqual({
      status: 400,
      body: { error: 'components[0].name: must be well-formed Unicode (lone surrogate U+D800 at index 1)' },
    });
    expect(await sbom({ ...cyclonedxDocument(), metadata: { 'k\u0000': 'v' } })).toEqual({
      status: 400,
      body: { error: `metadata: field name ${NUL}` },
    });
    const cdxVex = {
      ...cyclonedxDocument(),
      vulnerabilities: [{ id: 'CVE-2021-44228', analysis: { state: 'not_affected', detail: 'x\u0000' }, affects: [{ ref: 'c0' }] }],
    };
    expect(await vex(cdxVex, CDX)).toEqual({ status: 400, body: { error: `vulnerabilities[0].analysis.detail: ${NUL}` } });
    expect(await vex(openvexDocument({ justification: 'x\ud800' }), OPENVEX)).toEqual({
      status: 400,
      body: { error: `statements[0].justification: ${SURROGATE}` },
    });
    expect((await vex(openvexDocument(), OPENVEX)).status).toBe(201);
  });

  it('an identifier longer than an index holds is 400 (an OSV record: skipped), not a database error', async () => {
    // random text does not compress: past what a btree entry holds on PostgreSQL
    const long = randomBytes(3000).toString('hex');
    const put = await send('PUT', `/api/v1/artifacts/${artifact}/sbom`, SPDX, wire(spdxDocument({ name: long })), f.admin);
    expect(put.status, JSON.stringify(put.body)).toBe(400);
    expect(put.body.error).toMatch(/^packages\[0\]\.name: package URL longer than 1024 bytes \(\d+\): too long for an identifier$/);
    const vex = await send('POST', `/api/v1/artifacts/${artifact}/vex`, OPENVEX, wire(openvexDocument({ vulnerability: { name: long } })), f.admin);
    expect(vex).toEqual({ status: 400, body: { error: 'statements[0].vulnerability.name: longer than 1024 bytes (6000): too long for an identifier' } });
    const osv = osvRecord({ id: 'GHSA-llll-oooo-nnnn', aliases: [long], affected: [{ ecosystem: 'npm', name: 'long-alias', versions: ['1.0.0'] }] });
    const r = await send('POST', '/api/v1/vuln-feeds/osv?source=osv:npm', 'application/zip', osvZip([osv]), f.admin);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({
      added: 0,
      skipped: 1,
      skipped_detail: [{ entry: 'GHSA-llll-oooo-nnnn.json', reason: 'aliases: longer than 1024 bytes (6000): too long for an identifier' }],
    });
  });

  it('a document nested deeper than 128 levels is 400 (the readers recurse); 50 levels of CycloneDX components are read', async () => {
    const nested = (depth: number) =>
      `{"bomFormat":"CycloneDX","specVersion":"1.5","components":${'[{"type":"library","name":"n","components":'.repeat(depth)}[]${'}]'.repeat(depth)}}`;
    for (const url of [`/api/v1/artifacts/${artifact}/sbom`, `/api/v1/artifacts/${artifact}/vex`]) {
      const r = await send(url.endsWith('sbom') ? 'PUT' : 'POST', url, CDX, nested(2000), f.admin);
      expect(r.status, url).toBe(400);
      expect(r.body.error).toMatch(/^components(\[0\]\.components){63}\[0\]: nested deeper than 128 levels$/);
    }
    const ok = await send('PUT', `/api/v1/artifacts/${artifact}/sbom`, CDX, nested(50), f.admin);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.components).toBe(50);
  });

  it('an OSV record breaking the rule is skipped with the field named; the KEV catalog is refused', async () => {
    const rec = (id: string, name: string, summary = `${id} summary`) =>
      osvRecord({ id, summary, affected: [{ ecosystem: 'npm', name, ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '2.0.0' }] }] }] });
    const zip = osvZip([rec('GHSA-aaaa-bbbb-cccc', 'ok-pkg'), rec('GHSA-nnnn-uuuu-llll', 'a\u0000b'), rec('GHSA-ssss-uuuu-rrrr', 'ok', 'x\ud800')]);
    const tar = await makeTar([{ name: 'GHSA-tttt-uuuu-rrrr.json', data: JSON.stringify(rec('GHSA-tttt-uuuu-rrrr', 'a\ud800')) }]);
    for (const [body, type] of [
      [zip, 'application/zip'],
      [tar, 'application/x-tar'],
    ] as const) {
      const r = await send('POST', '/api/v1/vuln-feeds/osv?source=osv:npm', type, body, f.admin);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      const skipped = Object.fromEntries((r.body.skipped_detail as { entry: string; reason: string }[]).map((s) => [s.entry, s.reason]));
      if (type === 'application/zip') {
        expect(r.body).toMatchObject({ added: 1, skipped: 2 });
        expect(skipped).toEqual({
          'GHSA-nnnn-uuuu-llll.json': `affected[0].package.name: ${NUL}`,
          'GHSA-ssss-uuuu-rrrr.json': `summary: ${SURROGATE}`,
        });
      } else {
        expect(r.body).toMatchObject({ added: 0, skipped: 1 });
        expect(skipped).toEqual({ 'GHSA-tttt-uuuu-rrrr.json': `affected[0].package.name: ${SURROGATE}` });
      }
    }
    const kev = kevCatalog([{ cve: 'CVE-2024-0001' }]) as { vulnerabilities: Record<string, unknown>[] };
    kev.vulnerabilities[0]!['vendorProject'] = 'V\u0000';
    expect(await send('POST', '/api/v1/vuln-feeds/kev', 'application/json', wire(kev), f.admin)).toEqual({
      status: 400,
      body: { error: `body.vulnerabilities.0.vendorProject: ${NUL}` },
    });
  });
});
