/**
 * Stage submissions: the content Article 14 asks for per stage and kind (every required field),
 * corrections that supersede, append-only tables enforced by the database, the branded PDF read
 * back with pdftotext, the CSAF 2.0 advisory checked against the official schema, filings and
 * the file and webhook transports (a real HTTP server on loopback).
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { createServer, type Server } from 'node:http';
import { join, resolve } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csafSchemaIssues } from '../../../src/resources/case-submissions/csaf.js';
import { STAGE_FIELDS, STAGES } from '../../../src/resources/case-submissions/fields.js';
import { CASE_KINDS } from '../../../src/resources/cases/deadlines.js';
import { createCasesFixture, VALID_CONTENT, type CasesFixture } from '../../fixtures/cases.js';
import { pdfAttachments, pdfFonts, pdfTool } from '../../helpers/pdf.js';
import { availableDrivers } from '../../helpers/store.js';
import { requireTool } from '../../../../../vitest.shared.js';

const hasPdftotext = ['pdftotext', 'pdfinfo', 'pdffonts', 'pdfdetach'].every((t) => requireTool(t, 'poppler-utils'));
// a 1x1 PNG
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const APPEND_ONLY = [
  'case_awareness',
  'case_decisions',
  'case_measures',
  'case_intermediate_requests',
  'case_submissions',
  'case_filings',
  'case_attachments',
  'case_attachment_redactions',
];

describe('docs/article-14.md lists exactly the fields of every stage and kind', () => {
  it('both ways, with the same required flag and type', () => {
    const doc = readFileSync(resolve(import.meta.dirname, '../../../../../docs/article-14.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| `(\w+)` \| `(\w+)` \| `(\w+)` \| (required|optional) \| (\w+) \|/gm)].map(
      (m) => `${m[1]} ${m[2]} ${m[3]} ${m[4]} ${m[5]}`,
    );
    const table = STAGES.flatMap((stage) =>
      CASE_KINDS.flatMap((kind) => STAGE_FIELDS[stage][kind].map((s) => `${stage} ${kind} ${s.name} ${s.required ? 'required' : 'optional'} ${s.type}`)),
    );
    expect(rows.sort()).toEqual(table.sort());
  });
});

describe.each(availableDrivers())('stage submissions on %s', (driver) => {
  let f: CasesFixture;
  let requestIds: Record<string, string>;
  let cases: Record<string, any>;
  beforeAll(async () => {
    f = await createCasesFixture(driver);
    f.t.clock.set(new Date('2026-10-01T12:00:00Z'));
    cases = {};
    requestIds = {};
    // a security advisory names the affected products: the vulnerability links an artifact
    const affected = await f.artifact('fields-fw', '1.0.0');
    for (const kind of CASE_KINDS) {
      cases[kind] = await f.openCase({ kind, title: `fields ${kind}`, ...(kind === 'exploited_vulnerability' ? { artifact_ids: [affected.id] } : {}) });
      requestIds[kind] = (
        await f.api('POST', `/api/v1/cases/${cases[kind].id}/intermediate-requests`, { requested_by: 'CSIRT FR', due_at: '2026-10-09T00:00:00Z' })
      ).body.request_id;
    }
  });
  afterAll(async () => {
    await f?.dispose();
  });

  const valid = (stage: (typeof STAGES)[number], kind: (typeof CASE_KINDS)[number]): Record<string, unknown> =>
    stage === 'intermediate' ? { request_id: requestIds[kind], status_update: 'Patch in QA.', sensitivity: 'TLP:GREEN' } : { ...VALID_CONTENT[stage][kind] };
  const submit = (kind: string, body: unknown) => f.api('POST', `/api/v1/cases/${cases[kind].id}/submissions`, body);

  it('every required field of every stage and kind: missing is a 400 naming it; the complete content is accepted', async () => {
    let checked = 0;
    for (const stage of STAGES) {
      for (const kind of CASE_KINDS) {
        for (const spec of STAGE_FIELDS[stage][kind].filter((s) => s.required)) {
          const content = valid(stage, kind);
          delete content[spec.name];
          const res = await submit(kind, { stage, content });
          expect(res.status, `${stage}/${kind} without ${spec.name}`).toBe(400);
          expect(res.body.error).toBe(`content.${spec.name}: is required for ${stage} of ${kind}`);
          checked += 1;
        }
        const ok = await submit(kind, { stage, content: valid(stage, kind) });
        expect(ok.status, `${stage}/${kind}: ${JSON.stringify(ok.body)}`).toBe(201);
        expect(ok.body.document).toMatchObject({
          type: 'svc.cra-article14-submission.v1',
          stage,
          content: valid(stage, kind),
          case: { id: cases[kind].id, kind },
        });
      }
    }
    expect(checked).toBe(STAGES.reduce((n, s) => n + CASE_KINDS.reduce((m, k) => m + STAGE_FIELDS[s][k].filter((x) => x.required).length, 0), 0));
  });

  it('GET /case-submission-fields serves the table submissions are checked against, with the values of its types', async () => {
    const res = await f.api('GET', '/api/v1/case-submission-fields');
    expect(res.status).toBe(200);
    expect(res.body.stages.map((s: { stage: string }) => s.stage)).toEqual([...STAGES]);
    for (const entry of res.body.stages) {
      for (const kind of CASE_KINDS) expect(entry.fields[kind], `${entry.stage}/${kind}`).toEqual(STAGE_FIELDS[entry.stage as (typeof STAGES)[number]][kind]);
    }
    expect(res.body.tlp).toEqual(['TLP:CLEAR', 'TLP:GREEN', 'TLP:AMBER', 'TLP:AMBER+STRICT', 'TLP:RED']);
    expect(res.body.severities).toEqual(['low', 'medium', 'high', 'critical']);
    expect(res.body.member_states).toHaveLength(27);
    expect(res.body.member_states).toContain('GR');
  });

  it('names every problem at once: unknown fields, bad values, the fields of the other kind', async () => {
    const res = await submit('exploited_vulnerability', {
      stage: 'early_warning',
      content: { member_states: ['DE', 'XX'], sensitivity: 'secret', suspected_malicious: true, extra: 1 },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.split('; ')).toEqual([
      'content.suspected_malicious: not a field of early_warning for exploited_vulnerability',
      'content.extra: not a field of early_warning for exploited_vulnerability',
      'content.member_states: "XX" is not a Member State code (AT, BE, BG, CY, CZ, DE, DK, EE, ES, FI, FR, GR, HR, HU, IE, IT, LT, LU, LV, MT, NL, PL, PT, RO, SE, SI, SK)',
      'content.sensitivity: must be one of TLP:CLEAR, TLP:GREEN, TLP:AMBER, TLP:AMBER+STRICT, TLP:RED',
    ]);
    const bad = [
      [
        { stage: 'early_warning', content: { ...VALID_CONTENT.early_warning.severe_incident, suspected_malicious: 'yes' } },
        /suspected_malicious: must be true or false/,
      ],
      [{ stage: 'final_report', content: { ...VALID_CONTENT.final_report.severe_incident, severity: 'severe' } }, /severity: must be one of low/],
      [{ stage: 'final_report', content: { ...VALID_CONTENT.final_report.severe_incident, impact: '   ' } }, /impact: must be a non-empty string/],
      [{ stage: 'advisory', content: { ...VALID_CONTENT.advisory.severe_incident, publisher_namespace: 'ftp://x' } }, /publisher_namespace: must be an https/],
      [
        { stage: 'intermediate', content: { request_id: '00000000-0000-4000-8000-000000000000', status_update: 's', sensitivity: 'TLP:RED' } },
        /content\.request_id: case .* has no intermediate-report request/,
      ],
      [{ stage: 'notification', content: [] }, /content/],
      [{ stage: 'ransom', content: {} }, /stage/],
      [{ stage: 'early_warning' }, /content: is required/],
    ] as const;
    for (const [body, error] of bad) {
      const r = await submit('severe_incident', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toMatch(error);
    }
  });

  it('a correction is a new submission referencing the one it supersedes; the old one stays, a chain stays linear', async () => {
    const kind = 'exploited_vulnerability';
    const first = (await submit(kind, { stage: 'notification', content: valid('notification', kind) })).body;
    const fixed = await submit(kind, {
      stage: 'notification',
      content: { ...valid('notification', kind), user_measures: 'Update to 2.4.1.' },
      supersedes_id: first.id,
    });
    expect(fixed.status).toBe(201);
    expect(fixed.body.document.supersedes).toEqual({ id: first.id, digest: first.digest });
    expect(fixed.body.digest).not.toBe(first.digest);
    const old = (await f.api('GET', `/api/v1/cases/${cases[kind].id}/submissions/${first.id}`)).body;
    expect(old).toMatchObject({ superseded_by: fixed.body.id, digest: first.digest, document: first.document });
    const twice = await submit(kind, { stage: 'notification', content: valid('notification', kind), supersedes_id: first.id });
    expect(twice.status).toBe(409);
    expect(twice.body.error).toMatch(/already superseded by/);
    expect((await f.api('POST', `/api/v1/cases/${cases[kind].id}/submissions/${first.id}/filings`, { recipients: ['csirt'], member_state: 'DE' })).status).toBe(
      409,
    );
    const otherStage = await submit(kind, { stage: 'final_report', content: valid('final_report', kind), supersedes_id: fixed.body.id });
    expect(otherStage.status).toBe(400);
    const list = (await f.api('GET', `/api/v1/cases/${cases[kind].id}/submissions?stage=notification`)).body;
    expect(list.submissions.map((s: any) => [s.id, s.superseded_by])).toEqual(
      expect.arrayContaining([
        [first.id, fixed.body.id],
        [fixed.body.id, null],
      ]),
    );
    expect(list.counts.notification).toBe(list.total);
    expect(Object.keys(list.counts).sort()).toEqual([...STAGES].sort());
    // the exact bytes: canonical JSON whose SHA-256 is the digest
    const doc = await f.api('GET', `/api/v1/cases/${cases[kind].id}/submissions/${first.id}/document`);
    expect(`sha256:${createHash('sha256').update(doc.raw).digest('hex')}`).toBe(first.digest);
    expect(doc.headers['x-content-digest']).toBe(first.digest);
  });

  it('the evidence tables are append-only in the database: UPDATE, DELETE and TRUNCATE are refused', async () => {
    const db = f.t.testStore.store.db;
    // every table has rows by now except redactions: attach and redact one file
    const { attachmentMultipart } = await import('../../fixtures/cases-multipart.js');
    const { payload, contentType } = attachmentMultipart([{ name: 'file', filename: 'a.txt', type: 'text/plain', body: 'x' }]);
    const a = JSON.parse(
      (
        await f.t.app.inject({
          method: 'POST',
          url: `/api/v1/cases/${cases.severe_incident.id}/attachments`,
          headers: { ...f.admin, 'content-type': contentType },
          payload,
        })
      ).body,
    );
    await f.api('POST', `/api/v1/cases/${cases.severe_incident.id}/attachments/${a.id}/redaction`, { reason: 'wrong file' });
    await f.api('POST', `/api/v1/cases/${cases.severe_incident.id}/corrective-measure`, { description: 'fix' });
    await f.api('POST', `/api/v1/cases/${cases.severe_incident.id}/assessments`, { outcome: 'reportable', rationale: 'r' });
    const s = (await f.api('GET', `/api/v1/cases/${cases.severe_incident.id}/submissions`)).body.submissions[0];
    await f.api('POST', `/api/v1/cases/${cases.severe_incident.id}/submissions/${s.id}/filings`, { recipients: ['enisa'] });
    for (const table of APPEND_ONLY) {
      const n = Number((await sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.table(table)}`.execute(db)).rows[0]!.n);
      expect(n, table).toBeGreaterThan(0);
      await expect(sql`UPDATE ${sql.table(table)} SET tenant_id = tenant_id`.execute(db), table).rejects.toThrow(/is append-only: UPDATE refused/);
      await expect(sql`DELETE FROM ${sql.table(table)}`.execute(db), table).rejects.toThrow(/is append-only: DELETE refused/);
      await expect(sql`TRUNCATE ${sql.table(table)} CASCADE`.execute(db), table).rejects.toThrow(/is append-only: TRUNCATE refused/);
    }
  });

  it.skipIf(!hasPdftotext)('the PDF carries the report branding (company name, logo, footer) and the document: read back with pdftotext', async () => {
    const branded = await f.api(
      'PUT',
      '/api/v1/admin/branding',
      { company_name: 'Acme Devices GmbH', primary_color: '#111827', accent_color: '#b91c1c', logo_data_url: `data:image/png;base64,${PNG}` },
      await f.t.loginAs('admin'),
    );
    expect(branded.status).toBeLessThan(300);
    const s = (await submit('exploited_vulnerability', { stage: 'early_warning', content: valid('early_warning', 'exploited_vulnerability') })).body;
    const pdf = await f.api('GET', `/api/v1/cases/${cases.exploited_vulnerability.id}/submissions/${s.id}/pdf`);
    expect(pdf.status).toBe(200);
    expect(pdf.headers['content-type']).toBe('application/pdf');
    expect(`sha256:${createHash('sha256').update(pdf.raw).digest('hex')}`).toBe(s.pdf_digest);
    const text = execFileSync('pdftotext', ['-layout', '-', '-'], { input: pdf.raw }).toString('utf8');
    for (const want of [
      'Acme Devices GmbH',
      'Early warning notification: fields exploited_vulnerability',
      'Art. 14(2)(a)',
      'Member States where the product is made available',
      'DE, FR',
      'TLP:AMBER',
      s.digest,
      'Acme Devices GmbH - Article 14 submission',
      'page 1',
    ]) {
      expect(text).toContain(want);
    }
    expect(s.document.manufacturer.name).toBe('Acme Devices GmbH');
    // archival: PDF/A-3b, every font embedded, the exact document attached (the bytes /document serves)
    for (const font of pdfFonts(pdf.raw)) expect(font, font.name).toMatchObject({ embedded: true, subset: true });
    expect(pdfTool(pdf.raw, 'pdfinfo', ['-meta', '{}'])).toMatch(/<pdfaid:part>3<\/pdfaid:part>[\s\S]*<pdfaid:conformance>B<\/pdfaid:conformance>/);
    expect(pdfTool(pdf.raw, 'pdfinfo', ['-enc', 'UTF-8', '{}'])).toMatch(/^Author:\s+Acme Devices GmbH$/m);
    const document = await f.api('GET', `/api/v1/cases/${cases.exploited_vulnerability.id}/submissions/${s.id}/document`);
    expect(document.status).toBe(200);
    const attached = pdfAttachments(pdf.raw);
    expect([...attached.keys()]).toEqual([`early_warning-${s.id}.json`]);
    expect(attached.get(`early_warning-${s.id}.json`)!.equals(document.raw)).toBe(true);
    expect(`sha256:${createHash('sha256').update(document.raw).digest('hex')}`).toBe(s.digest);
    // the logo is embedded: one 1x1 image (pdfimages lists the page's images)
    const dir = await mkdtemp(join(tmpdir(), 'svc-case-pdf-'));
    await writeFile(join(dir, 's.pdf'), pdf.raw);
    const images = execFileSync('pdfimages', ['-list', join(dir, 's.pdf')])
      .toString('utf8')
      .trim()
      .split('\n')
      .slice(2);
    await rm(dir, { recursive: true, force: true });
    const logos = images.map((l) => l.trim().split(/\s+/)).filter((cols) => cols[2] === 'image');
    expect(logos.map((cols) => [cols[0], cols[3], cols[4]])).toEqual([['1', '1', '1']]);
  });

  it('the advisory is a CSAF 2.0 document valid against the official schema, with the product tree from the artifacts and the fix from the release', async () => {
    const vulnerable = await f.artifact('adv-fw', '1.0.0');
    const c = await f.openCase({ title: 'advisory', artifact_ids: [vulnerable.id], vulnerability_ids: ['CVE-2026-4242', 'GHSA-wxrw-8f4c-62p5'] });
    const first = await f.api('POST', `/api/v1/cases/${c.id}/submissions`, { stage: 'advisory', content: valid('advisory', 'exploited_vulnerability') });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const csaf = (await f.api('GET', `/api/v1/cases/${c.id}/submissions/${first.body.id}/csaf`)).body;
    expect(csafSchemaIssues(csaf)).toEqual([]);
    expect(csaf.document).toMatchObject({
      category: 'csaf_security_advisory',
      csaf_version: '2.0',
      tracking: { version: '1', status: 'final' },
      publisher: { namespace: 'https://psirt.example.test' },
    });
    expect(csaf.vulnerabilities.map((v: any) => v.cve ?? v.ids[0].text)).toEqual(['CVE-2026-4242', 'GHSA-wxrw-8f4c-62p5']);
    const product = csaf.product_tree.branches[0].branches[0].branches[0].product;
    expect(product.product_identification_helper.hashes[0].file_hashes[0].value).toBe(vulnerable.digest.slice(7));
    // a correction after the fix is recorded: revision 2, the release fixed, a vendor fix
    const { newAuthorizer, releasePayload, sign } = await import('../../fixtures/release-flow.js');
    await f.device('adv-1');
    const fixedArt = await f.artifact('adv-fw', '1.0.1');
    const group = (await f.api('POST', '/api/v1/groups', { name: 'adv', members: ['adv-1'] })).body;
    const auth = newAuthorizer();
    await f.api('POST', '/api/v1/authorizer-keys', { name: 'adv', public_key_pem: auth.pem });
    const rel = (
      await f.api('POST', '/api/v1/releases', {
        envelope: sign(releasePayload({ tenant: f.t.tenantId, artifacts: [fixedArt], group, version: '1.0.1' }), auth.key),
        expected_product: 'edge-gateway',
      })
    ).body;
    await f.api('POST', `/api/v1/cases/${c.id}/corrective-measure`, { release_id: rel.id, description: '1.0.1 fixes it' });
    f.t.clock.advance(3600_000);
    const second = await f.api('POST', `/api/v1/cases/${c.id}/submissions`, {
      stage: 'advisory',
      content: valid('advisory', 'exploited_vulnerability'),
      supersedes_id: first.body.id,
    });
    const csaf2 = second.body.document.csaf;
    expect(csafSchemaIssues(csaf2)).toEqual([]);
    expect(csaf2.document.tracking.version).toBe('2');
    expect(csaf2.document.tracking.revision_history.map((r: any) => r.number)).toEqual(['1', '2']);
    expect(csaf2.vulnerabilities[0].product_status).toEqual({ known_affected: [`CSAFPID-A-${vulnerable.id}`], fixed: [`CSAFPID-R-${rel.id}`] });
    expect(csaf2.vulnerabilities[0].remediations[0]).toMatchObject({
      category: 'vendor_fix',
      details: 'Update to edge-gateway 1.0.1.',
      product_ids: [`CSAFPID-A-${vulnerable.id}`],
    });
    // the validator is the real schema: it refuses what CSAF 2.0 refuses
    expect(csafSchemaIssues({ ...csaf2, document: { ...csaf2.document, tracking: undefined } }).join()).toMatch(/tracking/);
    expect(csafSchemaIssues({ ...csaf2, vulnerabilities: [{ cve: 'CVE-26-1' }] }).join()).toMatch(/vulnerabilities\/0\/cve/);
    expect(
      csafSchemaIssues({
        ...csaf2,
        vulnerabilities: [{ scores: [{ products: ['x'], cvss_v3: { version: '3.1', vectorString: 'nope', baseScore: 1, baseSeverity: 'LOW' } }] }],
      }).join(),
    ).toMatch(/cvss_v3/);
    // the incident profile and a notification's document has no CSAF
    const inc = (await submit('severe_incident', { stage: 'advisory', content: valid('advisory', 'severe_incident') })).body;
    expect(csafSchemaIssues(inc.document.csaf)).toEqual([]);
    expect(inc.document.csaf.document.category).toBe('csaf_security_incident_response');
    const note = (await submit('severe_incident', { stage: 'notification', content: valid('notification', 'severe_incident') })).body;
    expect((await f.api('GET', `/api/v1/cases/${cases.severe_incident.id}/submissions/${note.id}/csaf`)).status).toBe(404);
  });

  it('filings: who, when, to whom, the reference returned; recipients fit the stage; never in the future', async () => {
    const kind = 'severe_incident';
    const s = (await submit(kind, { stage: 'early_warning', content: valid('early_warning', kind) })).body;
    const url = `/api/v1/cases/${cases[kind].id}/submissions/${s.id}/filings`;
    const now = f.t.clock.now().getTime();
    const iso = (ms: number) => new Date(now + ms).toISOString();
    for (const [body, error] of [
      [{ recipients: ['csirt'] }, /member_state: the Member State of the coordinator CSIRT/],
      [{ recipients: ['users'] }, /not to users/],
      [{ recipients: ['enisa'], member_state: 'DE' }, /member_state: only for a filing to the CSIRT/],
      [{ recipients: ['csirt', 'csirt'], member_state: 'DE' }, /twice/],
      [{ recipients: [] }, /recipients/],
      [{ recipients: ['csirt'], member_state: 'UK' }, /member_state/],
      [{ recipients: ['enisa'], filed_at: iso(1000) }, /filed_at: .* is in the future/],
      [{ recipients: ['enisa'], filed_at: iso(-1000) }, /filed_at: .* before the submission was produced/],
      [{ recipients: ['enisa'], transport: 'file', filed_at: iso(0) }, /filed_at: only for a manual filing/],
      [{ recipients: ['enisa'], transport: 'webhook' }, /^transport: the webhook transport is not configured/],
      [{ recipients: ['enisa'], transport: 'file', external_reference: 'x' }, /external_reference/],
      [{ recipients: ['enisa'], transport: 'carrier-pigeon' }, /transport/],
    ] as const) {
      const r = await f.api('POST', url, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toMatch(error);
    }
    const manual = await f.api('POST', url, { recipients: ['csirt', 'enisa'], member_state: 'NL', external_reference: 'SRP-2026-0042' });
    expect(manual.status).toBe(201);
    expect(manual.body).toMatchObject({
      recipients: ['csirt', 'enisa'],
      member_state: 'NL',
      transport: 'manual',
      external_reference: 'SRP-2026-0042',
      filed_at: iso(0),
    });
    const file = await f.api('POST', url, { recipients: ['enisa'], transport: 'file' });
    expect(file.status).toBe(201);
    expect(file.body.delivery.host).toBe(hostname());
    const [jsonPath, pdfPath] = file.body.delivery.files as string[];
    expect((await readFile(jsonPath!)).equals((await f.api('GET', `/api/v1/cases/${cases[kind].id}/submissions/${s.id}/document`)).raw)).toBe(true);
    expect((await readFile(pdfPath!)).subarray(0, 5).toString()).toBe('%PDF-');
    const adv = (await submit(kind, { stage: 'advisory', content: valid('advisory', kind) })).body;
    expect((await f.api('POST', `/api/v1/cases/${cases[kind].id}/submissions/${adv.id}/filings`, { recipients: ['csirt'], member_state: 'DE' })).status).toBe(
      400,
    );
    expect(
      (
        await f.api('POST', `/api/v1/cases/${cases[kind].id}/submissions/${adv.id}/filings`, {
          recipients: ['users'],
          external_reference: 'https://psirt.example.test/advisories/1',
        })
      ).status,
    ).toBe(201);
    const got = (await f.api('GET', `/api/v1/cases/${cases[kind].id}/submissions/${s.id}`)).body;
    expect(got.filings.map((x: any) => x.transport)).toEqual(['manual', 'file']);
  });
});

describe.each(availableDrivers())('the webhook transport posts only to the configured URL (loopback server) on %s', (driver) => {
  let f: CasesFixture;
  let server: Server;
  const received: { headers: Record<string, unknown>; body: Buffer }[] = [];
  let answer = { status: 200, body: '{"reference":"SRP-77"}' };
  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    f = await createCasesFixture(driver, { evidence: { webhookUrl: `http://127.0.0.1:${port}/srp`, webhookTimeoutMs: 2000 } });
  });
  afterAll(async () => {
    await f?.dispose();
    await new Promise((r) => server.close(r));
  });

  it('delivers the exact document, records the returned reference; a failure records nothing and says why', async () => {
    const c = await f.openCase();
    const s = (
      await f.api('POST', `/api/v1/cases/${c.id}/submissions`, { stage: 'early_warning', content: VALID_CONTENT.early_warning.exploited_vulnerability })
    ).body;
    const url = `/api/v1/cases/${c.id}/submissions/${s.id}/filings`;
    const ok = await f.api('POST', url, { recipients: ['csirt', 'enisa'], member_state: 'DE', transport: 'webhook' });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    expect(ok.body).toMatchObject({ transport: 'webhook', external_reference: 'SRP-77', delivery: { status: 200 } });
    expect(received).toHaveLength(1);
    expect(received[0]!.headers['x-svc-submission-digest']).toBe(s.digest);
    expect(`sha256:${createHash('sha256').update(received[0]!.body).digest('hex')}`).toBe(s.digest);
    answer = { status: 503, body: 'down' };
    const failed = await f.api('POST', url, { recipients: ['enisa'], transport: 'webhook' });
    expect(failed.status).toBe(400);
    expect(failed.body.error).toBe('webhook: the configured URL answered 503');
    expect((await f.api('GET', `/api/v1/cases/${c.id}/submissions/${s.id}`)).body.filings).toHaveLength(1);
    expect((await f.api('GET', `/api/v1/cases/${c.id}/audit`)).body.counts['case.submission-file']).toBe(1);
  });
});
