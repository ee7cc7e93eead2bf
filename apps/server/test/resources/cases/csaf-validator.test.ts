/**
 * Every CSAF document the service produces, checked by the BSI/Secvisogram validator
 * (@secvisogram/csaf-validator-lib): the CSAF 2.0 schema (plain and strict), every mandatory
 * test (6.1.x) and every recommended test (6.2.x, `optionalTests` in the library's CSAF 2.0
 * API). The documents are produced through the API for both case kinds, with and without
 * vulnerability ids, artifacts and a fixing release, for every stage, and for corrections
 * (version 2 and 3). Only the schema, mandatory and recommended modules are imported: none of
 * them does I/O (the informative 6.3.x tests, which fetch URLs and run hunspell, are not).
 */
import validate, { type DocumentTest } from '@secvisogram/csaf-validator-lib/validate.js';
import * as mandatory from '@secvisogram/csaf-validator-lib/mandatoryTests.js';
import * as recommended from '@secvisogram/csaf-validator-lib/optionalTests.js';
import { csaf_2_0, csaf_2_0_strict } from '@secvisogram/csaf-validator-lib/schemaTests.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config.js';
import { STAGES } from '../../../src/resources/case-submissions/fields.js';
import { evidenceOptionsFromEnv } from '../../../src/resources/case-submissions/transport.js';
import { createCasesFixture, VALID_CONTENT, type CasesFixture } from '../../fixtures/cases.js';
import { availableDrivers } from '../../helpers/store.js';
import { newAuthorizer, releasePayload, sign } from '../../fixtures/release-flow.js';

const MANDATORY = Object.values<DocumentTest>(mandatory);
const RECOMMENDED = Object.values<DocumentTest>(recommended);
const TESTS: DocumentTest[] = [csaf_2_0, csaf_2_0_strict, ...MANDATORY, ...RECOMMENDED];

/**
 * The one recommended test the advisories deliberately do not meet (docs/article-14.md,
 * "Information to users"): 6.2.3 asks a CVSS score for every affected product, and a case
 * records its severity as a word (low to critical), never a CVSS vector. The exception is the
 * exact list of affected products of each vulnerability, nothing else.
 */
function expectedFindings(doc: any): string[] {
  if (doc.vulnerabilities === undefined) return [];
  return (doc.vulnerabilities as any[]).flatMap((v, i) => {
    expect(v.scores, `vulnerability ${i} has no scores`).toBeUndefined();
    return ((v.product_status?.known_affected ?? []) as string[]).map(
      (_, j) => `optionalTest_6_2_3 warning /vulnerabilities/${i}/product_status/known_affected/${j}: missing score`,
    );
  });
}

async function findings(doc: unknown): Promise<string[]> {
  const result = await validate(TESTS, doc);
  expect(result.tests.map((t) => t.name)).toEqual(TESTS.map((t) => t.name));
  return result.tests.flatMap((t) =>
    (['errors', 'warnings', 'infos'] as const).flatMap((kind) => t[kind].map((x) => `${t.name} ${kind.slice(0, -1)} ${x.instancePath}: ${x.message}`)),
  );
}

describe('the validator runs every mandatory and recommended test of CSAF 2.0', () => {
  it('the lists hold 6.1.1 to 6.1.33 (6.1.27.1 to .11) and 6.2.1 to 6.2.20', () => {
    const names = TESTS.map((t) => t.name);
    expect(names).toContain('mandatoryTest_6_1_27_2');
    expect(MANDATORY).toHaveLength(33 - 1 + 11);
    expect(new Set(RECOMMENDED.map((t) => t.name))).toEqual(new Set(Array.from({ length: 20 }, (_, i) => `optionalTest_6_2_${i + 1}`)));
  });
});

describe.each(availableDrivers())('every CSAF document the service produces passes the validator on %s', (driver) => {
  let f: CasesFixture;
  /** label -> the CSAF document as `GET .../csaf` serves it */
  const produced = new Map<string, any>();
  const stagesWithCsaf = new Set<string>();

  beforeAll(async () => {
    f = await createCasesFixture(driver);
    f.t.clock.set(new Date('2026-10-01T12:00:00Z'));
  });
  afterAll(async () => {
    await f?.dispose();
  });

  const submit = async (caseId: string, stage: (typeof STAGES)[number], content: Record<string, unknown>, supersedes?: string) => {
    const res = await f.api('POST', `/api/v1/cases/${caseId}/submissions`, { stage, content, ...(supersedes ? { supersedes_id: supersedes } : {}) });
    expect(res.status, `${stage}: ${JSON.stringify(res.body)}`).toBe(201);
    return res.body;
  };
  /** Every stage of a case, each document's CSAF (if any) collected; answers the advisory's id. */
  const everyStage = async (label: string, c: any, kind: 'exploited_vulnerability' | 'severe_incident', advisory: Record<string, unknown>) => {
    const request = (await f.api('POST', `/api/v1/cases/${c.id}/intermediate-requests`, { requested_by: 'CSIRT DE', due_at: '2026-10-09T00:00:00Z' })).body;
    let advisoryId = '';
    for (const stage of STAGES) {
      const content =
        stage === 'intermediate'
          ? { request_id: request.request_id, status_update: 'Patch in QA.', sensitivity: 'TLP:GREEN' }
          : stage === 'advisory'
            ? advisory
            : { ...VALID_CONTENT[stage][kind] };
      const s = await submit(c.id, stage, content);
      const served = await f.api('GET', `/api/v1/cases/${c.id}/submissions/${s.id}/csaf`);
      if (s.document.csaf !== undefined) {
        stagesWithCsaf.add(stage);
        expect(served.status).toBe(200);
        expect(served.body).toEqual(s.document.csaf);
        produced.set(`${label} ${stage} v1`, served.body);
      } else expect(served.status).toBe(404);
      if (stage === 'advisory') advisoryId = s.id;
    }
    return advisoryId;
  };
  const correct = async (label: string, c: any, previous: string, content: Record<string, unknown>) => {
    f.t.clock.advance(3600_000);
    const s = await submit(c.id, 'advisory', content, previous);
    const served = (await f.api('GET', `/api/v1/cases/${c.id}/submissions/${s.id}/csaf`)).body;
    produced.set(`${label} advisory v${served.document.tracking.version}`, served);
    return s.id as string;
  };
  const fixingRelease = async (c: any, product: string, version: string, artifacts: any[]) => {
    await f.device(`${product}-${version}-dev`);
    const group = (await f.api('POST', '/api/v1/groups', { name: `${product}-${version}`, members: [`${product}-${version}-dev`] })).body;
    const auth = newAuthorizer();
    await f.api('POST', '/api/v1/authorizer-keys', { name: `${product}-${version}`, public_key_pem: auth.pem });
    const rel = await f.api('POST', '/api/v1/releases', {
      envelope: sign(releasePayload({ tenant: f.t.tenantId, product, artifacts, group, version }), auth.key),
      expected_product: product,
    });
    expect(rel.status, JSON.stringify(rel.body)).toBe(201);
    const measure = await f.api('POST', `/api/v1/cases/${c.id}/corrective-measure`, { release_id: rel.body.id, description: `${version} fixes it` });
    expect(measure.status, JSON.stringify(measure.body)).toBe(200);
    return rel.body;
  };

  it('an actively exploited vulnerability: every stage, the advisory before the fix, its corrections after it', async () => {
    const fw = await f.artifact('gw-fw', '2.4.0');
    const agent = await f.artifact('gw-agent', '1.9.0');
    const c = await f.openCase({
      title: 'vulnerability',
      products: ['edge-gateway'],
      artifact_ids: [fw.id, agent.id],
      vulnerability_ids: ['CVE-2026-4242', 'GHSA-wxrw-8f4c-62p5', 'PYSEC-2026-7'],
    });
    const content = { ...VALID_CONTENT.advisory.exploited_vulnerability };
    const v1 = await everyStage('vulnerability', c, 'exploited_vulnerability', content);
    const fixes = [await f.artifact('gw-fw', '2.4.1'), await f.artifact('gw-agent', '1.9.1')];
    const rel = await fixingRelease(c, 'edge-gateway', '2.4.1', fixes);
    const v2 = await correct('vulnerability', c, v1, content);
    await correct('vulnerability', c, v2, { ...content, sensitivity: 'TLP:AMBER' });
    // the canonical URL: the publisher namespace's CSAF directory, the TLP folder, the year of the initial release, the tracking id
    const self = (label: string) => produced.get(label).document.references.filter((r: any) => r.category === 'self');
    const file = `svc-case-${c.id}.json`;
    expect(self('vulnerability advisory v1')).toEqual([
      { category: 'self', summary: 'Canonical URL of this advisory', url: `https://psirt.example.test/.well-known/csaf/white/2026/${file}` },
    ]);
    expect(self('vulnerability advisory v3').map((r: any) => r.url)).toEqual([`https://psirt.example.test/.well-known/csaf/amber/2026/${file}`]);
    expect(produced.get('vulnerability advisory v1').document.lang).toBe('en');
    // the fixing release is identified by the files it installs
    const fixed = produced
      .get('vulnerability advisory v2')
      .product_tree.branches[0].branches.flatMap((b: any) => b.branches)
      .find((b: any) => b.product.product_id === `CSAFPID-R-${rel.id}`).product;
    expect(fixed.product_identification_helper.hashes).toEqual(
      // by name and version
      [...fixes]
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((a) => ({ filename: a.filename, file_hashes: [{ algorithm: 'sha256', value: a.digest.slice('sha256:'.length) }] })),
    );
  });

  it('a severe incident without vulnerability ids: every stage, the advisory, its correction after a fixing release', async () => {
    const fw = await f.artifact('gw-build', '7.0.0');
    const c = await f.openCase({ kind: 'severe_incident', title: 'incident', products: ['edge-gateway'], artifact_ids: [fw.id], vulnerability_ids: [] });
    const content = { ...VALID_CONTENT.advisory.severe_incident };
    const v1 = await everyStage('incident', c, 'severe_incident', content);
    await fixingRelease(c, 'gw-build', '7.0.1', [await f.artifact('gw-build', '7.0.1')]);
    await correct('incident', c, v1, { ...content, sensitivity: 'TLP:GREEN' });
    expect(produced.get('incident advisory v2').document.references).toEqual([
      { category: 'self', summary: 'Canonical URL of this advisory', url: `https://psirt.example.test/.well-known/csaf/green/2026/svc-case-${c.id}.json` },
      { category: 'external', summary: 'Further information from the publisher', url: content.information_url },
    ]);
  });

  it('a severe incident with a vulnerability id and nothing else linked', async () => {
    const c = await f.openCase({ kind: 'severe_incident', title: 'incident with a CVE', products: [], vulnerability_ids: ['CVE-2026-5151'] });
    await everyStage('incident with a CVE', c, 'severe_incident', { ...VALID_CONTENT.advisory.severe_incident });
  });

  it('a vulnerability case linking no artifact and no corrective release: the advisory is refused, naming artifact_ids', async () => {
    const c = await f.openCase({ title: 'no products', products: ['edge-gateway'] });
    const res = await f.api('POST', `/api/v1/cases/${c.id}/submissions`, { stage: 'advisory', content: { ...VALID_CONTENT.advisory.exploited_vulnerability } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/^artifact_ids: case \S+ links no artifact and no corrective release: a CSAF security advisory names the affected products/);
  });

  it('each document passes the schema, every mandatory test and every recommended test but the one documented exception', async () => {
    expect([...stagesWithCsaf]).toEqual(['advisory']);
    expect([...produced.keys()]).toEqual([
      'vulnerability advisory v1',
      'vulnerability advisory v2',
      'vulnerability advisory v3',
      'incident advisory v1',
      'incident advisory v2',
      'incident with a CVE advisory v1',
    ]);
    const report: Record<string, string[]> = {};
    const expected: Record<string, string[]> = {};
    for (const [label, doc] of produced) {
      report[label] = await findings(doc);
      expected[label] = expectedFindings(doc);
    }
    expect(report).toEqual(expected);
  });
});

describe.each(availableDrivers())('SVC_CSAF_BASE_URL places the canonical URL on %s', (driver) => {
  let f: CasesFixture;
  beforeAll(async () => {
    f = await createCasesFixture(driver, { evidence: evidenceOptionsFromEnv({ SVC_CSAF_BASE_URL: 'https://csaf.example.test/psirt/csaf/' }) });
    f.t.clock.set(new Date('2027-01-05T08:00:00Z'));
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('under the configured directory, and the document still passes the validator', async () => {
    const c = await f.openCase({ kind: 'severe_incident', title: 'configured base', vulnerability_ids: [] });
    const s = await f.api('POST', `/api/v1/cases/${c.id}/submissions`, {
      stage: 'advisory',
      content: { ...VALID_CONTENT.advisory.severe_incident, sensitivity: 'TLP:RED' },
    });
    expect(s.status, JSON.stringify(s.body)).toBe(201);
    const doc = (await f.api('GET', `/api/v1/cases/${c.id}/submissions/${s.body.id}/csaf`)).body;
    expect(doc.document.references[0].url).toBe(`https://csaf.example.test/psirt/csaf/red/2027/svc-case-${c.id}.json`);
    expect(await findings(doc)).toEqual(expectedFindings(doc));
  });
});

describe('SVC_CSAF_BASE_URL', () => {
  it('an https URL without query or fragment; one line naming the variable otherwise', () => {
    expect(evidenceOptionsFromEnv({})).toEqual({});
    expect(evidenceOptionsFromEnv({ SVC_CSAF_BASE_URL: ' https://psirt.example.test/.well-known/csaf// ' })).toEqual({
      csafBaseUrl: 'https://psirt.example.test/.well-known/csaf',
    });
    for (const [value, error] of [
      ['http://psirt.example.test/csaf', 'SVC_CSAF_BASE_URL: must be an https:// URL'],
      ['psirt.example.test', 'SVC_CSAF_BASE_URL: not a URL'],
      ['https://psirt.example.test/csaf?x=1', 'SVC_CSAF_BASE_URL: must have no query or fragment'],
      ['https://psirt.example.test/csaf#top', 'SVC_CSAF_BASE_URL: must have no query or fragment'],
    ]) {
      expect(() => evidenceOptionsFromEnv({ SVC_CSAF_BASE_URL: value }), value).toThrow(new ConfigError(error));
    }
    expect(() => evidenceOptionsFromEnv({ SVC_EVIDENCE_WEBHOOK_URL: 'ftp://x' })).toThrow(
      new ConfigError('SVC_EVIDENCE_WEBHOOK_URL: must be an http:// or https:// URL'),
    );
  });
});
