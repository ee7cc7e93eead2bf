/**
 * The reporting-platform packet: for every stage and both case kinds, the single reporting
 * platform form's fields in the table's order, the required ones marked, the missing ones
 * named (before the stage's submission) and filled (after it), values read from the case, its
 * submissions and a real fleet (an OSV feed, an SBOM, devices running the vulnerable artifact in
 * a group); recorded append-only with its digest and audit row; served as JSON and text/plain;
 * bad inputs refused naming the field.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { latestPacketOf } from '../../../src/resources/case-submissions/queries.js';
import { SRP_FORM, SRP_STAGES, srpFields } from '../../../src/resources/case-submissions/srp-form.js';
import { CASE_KINDS } from '../../../src/resources/cases/deadlines.js';
import { reportLegacyStatus } from '../../../src/resources/rollouts/commands.js';
import { deviceActor, runUnitOfWork } from '../../../src/resources/unit-of-work.js';
import { createCasesFixture, VALID_CONTENT, type CasesFixture } from '../../fixtures/cases.js';
import { cyclonedx, osvRecord, osvZip } from '../../helpers/feeds.js';
import { availableDrivers } from '../../helpers/store.js';
import { untar } from '../../fixtures/release-flow.js';

const LODASH = osvRecord({
  id: 'GHSA-35jh-r3h4-6jhm',
  aliases: ['CVE-2021-23337', 'EUVD-2021-4242'],
  affected: [{ ecosystem: 'npm', name: 'lodash', ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '4.17.21' }] }] }],
  severity: [{ type: 'CVSS_V3', score: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H' }],
});

type Kind = (typeof CASE_KINDS)[number];
type SrpStage = (typeof SRP_STAGES)[number];

/** The required fields the stage's own submission (or, for the final report of a vulnerability, the corrective measure) fills. */
const FILLED_BY_STAGE: Record<SrpStage, Record<Kind, string[]>> = {
  early_warning: { exploited_vulnerability: ['member_states', 'sensitivity'], severe_incident: ['member_states', 'suspected_malicious', 'sensitivity'] },
  notification: {
    exploited_vulnerability: ['product_information', 'vulnerability_nature', 'exploit_nature', 'corrective_measures_taken', 'user_measures'],
    severe_incident: ['product_information', 'incident_nature', 'initial_assessment', 'corrective_measures_taken', 'user_measures'],
  },
  final_report: {
    // severity and impact of a vulnerability already carry the fleet's figures
    exploited_vulnerability: ['corrective_measure_available_at', 'vulnerability_description', 'security_update'],
    // the impact carries the devices running the case's artifact
    severe_incident: ['incident_description', 'severity', 'root_cause', 'mitigation_measures'],
  },
};

describe('docs/article-14.md lists exactly the packet fields of the form table', () => {
  it('both ways, in order, with the requirement per stage', () => {
    const doc = readFileSync(resolve(import.meta.dirname, '../../../../../docs/article-14.md'), 'utf8');
    const rows = [
      ...doc.matchAll(
        /^\| (\d+) \| (common|vulnerability|incident) \| `(\w+)` \| ([^|]+) \| (required|optional|—) \| (required|optional|—) \| (required|optional|—) \|/gm,
      ),
    ].map((m) => `${m[1]} ${m[2]} ${m[3]} ${m[4]!.trim()} ${m[5]} ${m[6]} ${m[7]}`);
    const table = SRP_FORM.fields.map((f, i) => `${i + 1} ${f.section} ${f.id} ${f.label} ${SRP_STAGES.map((s) => f.stages[s] ?? '—').join(' ')}`);
    expect(rows).toEqual(table);
    expect(doc).toContain(`version \`${SRP_FORM.version}\``);
  });

  it('ids are unique within each kind, and every field shows at some stage', () => {
    for (const kind of CASE_KINDS) {
      const ids = SRP_FORM.fields
        .filter((f) => f.section === 'common' || f.section === (kind === 'exploited_vulnerability' ? 'vulnerability' : 'incident'))
        .map((f) => f.id);
      expect(new Set(ids).size, kind).toBe(ids.length);
    }
    for (const f of SRP_FORM.fields) expect(Object.keys(f.stages).length, f.id).toBeGreaterThan(0);
  });
});

describe.each(availableDrivers())('reporting-platform packets on %s', (driver) => {
  let f: CasesFixture;
  let vulnerable: any;
  const db = () => f.t.testStore.store.db;
  const post = (caseId: string, body: unknown) => f.api('POST', `/api/v1/cases/${caseId}/srp-packets`, body);

  beforeAll(async () => {
    f = await createCasesFixture(driver);
    f.t.clock.set(new Date('2026-10-01T12:00:00Z'));
    const feed = await f.t.app.inject({
      method: 'POST',
      url: '/api/v1/vuln-feeds/osv?source=test',
      headers: { ...f.admin, 'content-type': 'application/zip' },
      payload: osvZip([LODASH]),
    });
    expect(feed.statusCode, feed.body).toBe(201);
    vulnerable = await f.artifact('web-ui', '1.0.0');
    const sbom = await f.t.app.inject({
      method: 'PUT',
      url: `/api/v1/artifacts/${vulnerable.id}/sbom`,
      headers: { ...f.admin, 'content-type': 'application/vnd.cyclonedx+json' },
      payload: cyclonedx(['pkg:npm/lodash@4.17.20']),
    });
    expect(sbom.statusCode, sbom.body).toBe(200);
    for (const d of ['sp-1', 'sp-2']) await f.device(d);
    const group = (await f.api('POST', '/api/v1/groups', { name: 'sp-fleet', members: ['sp-1', 'sp-2'] })).body;
    const rollout = await f.api('POST', '/api/v1/rollouts', { artifact_id: vulnerable.id, group_id: group.id });
    expect(rollout.status, JSON.stringify(rollout.body)).toBe(201);
    for (const d of ['sp-1', 'sp-2'])
      await runUnitOfWork(db(), { tenant: f.t.tenantId, actor: deviceActor(d), now: f.t.clock.now() }, (uow) =>
        reportLegacyStatus(uow, { deviceName: d, rolloutId: rollout.body.id, status: 'installed' }),
      );
  });
  afterAll(async () => {
    await f?.dispose();
  });

  /** The packet answer follows the table: fields in order, required as the stage says, missing = required without a value; recorded with its digest and audit row. */
  async function checkPacket(caseId: string, kind: Kind, stage: SrpStage, res: { status: number; body: any }) {
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const p = res.body;
    const specs = srpFields(stage, kind);
    expect(p).toMatchObject({ case_id: caseId, stage, kind, form: { version: SRP_FORM.version, source: SRP_FORM.source } });
    expect(p.fields.map((x: any) => [x.id, x.label, x.required])).toEqual(specs.map((s) => [s.id, s.label, s.stages[stage] === 'required']));
    for (const x of p.fields) expect(x.missing, `${stage}/${kind} ${x.id}`).toBe(x.required && x.value === null);
    expect(p.missing).toEqual(p.fields.filter((x: any) => x.missing).map((x: any) => ({ id: x.id, label: x.label })));

    // recorded: the exact canonical JSON, its SHA-256, and the audit row written with it
    const row = await db().selectFrom('case_srp_packets').selectAll().where('id', '=', p.id).executeTakeFirstOrThrow();
    expect(p.digest).toBe(`sha256:${createHash('sha256').update(row.document).digest('hex')}`);
    expect(row).toMatchObject({ case_id: caseId, stage, digest: p.digest, missing: p.missing.length, form_version: SRP_FORM.version });
    const recorded = JSON.parse(Buffer.from(row.document).toString('utf8'));
    expect(recorded.fields).toEqual(p.fields);
    const audit = (await f.api('GET', `/api/v1/cases/${caseId}/audit?limit=200`)).body.events.filter((e: any) => e.action === 'case.packet-create');
    expect(audit.find((e: any) => e.detail.packet_id === p.id)?.detail).toEqual({
      packet_id: p.id,
      stage,
      digest: p.digest,
      form_version: SRP_FORM.version,
      submission_id: row.submission_id,
      missing: p.missing.map((m: any) => m.id),
    });

    // the same packet read back, and its text in the form's order
    expect((await f.api('GET', `/api/v1/cases/${caseId}/srp-packets/${p.id}`)).body).toEqual(p);
    const text = await f.t.app.inject({ method: 'GET', url: `/api/v1/cases/${caseId}/srp-packets/${p.id}/text`, headers: f.admin });
    expect(text.statusCode).toBe(200);
    expect(text.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(text.body).toBe(p.text);
    expect(text.body).toContain(p.digest);
    let at = 0;
    p.fields.forEach((x: any, i: number) => {
      const head = `\n${i + 1}. ${x.label} [${x.required ? 'required' : 'optional'}]${x.missing ? ' MISSING' : ''}\n${x.value ?? '(no value)'}\n`;
      const found = text.body.indexOf(head, at);
      expect(found, `${x.id} in order`).toBeGreaterThan(at - 1);
      at = found + head.length - 1;
    });
    if (p.missing.length > 0) expect(text.body).toContain(`Missing required values (${p.missing.length}): ${p.missing.map((m: any) => m.label).join('; ')}`);
    else expect(text.body).toContain('Every required field has a value.');
    return p;
  }

  const value = (p: any, id: string) => p.fields.find((x: any) => x.id === id)?.value;

  it.each(CASE_KINDS)('every stage of a %s: missing values named before the stage submission, filled from it and the fleet after', async (kind) => {
    const c = await f.openCase({
      kind,
      title: `packet ${kind}`,
      products: ['web-ui'],
      artifact_ids: [vulnerable.id],
      vulnerability_ids: kind === 'exploited_vulnerability' ? ['CVE-2021-23337'] : [],
    });
    await f.api('POST', `/api/v1/cases/${c.id}/assessments`, {
      outcome: 'reportable',
      rationale: 'Malicious code could be executed on the devices (Art. 14(6)(b)).',
    });
    for (const stage of SRP_STAGES) {
      const before = await checkPacket(c.id, kind, stage, await post(c.id, { stage }));
      expect(before.missing.map((m: any) => m.id).sort(), `${stage} before`).toEqual([...FILLED_BY_STAGE[stage][kind]].sort());
      expect(before.submission_id).toBeNull();

      if (stage === 'final_report' && kind === 'exploited_vulnerability') {
        const m = await f.api('POST', `/api/v1/cases/${c.id}/corrective-measure`, { description: 'Release 2.0.0 ships lodash 4.17.21.' });
        expect(m.status, JSON.stringify(m.body)).toBe(200);
      }
      const sub = await f.api('POST', `/api/v1/cases/${c.id}/submissions`, { stage, content: VALID_CONTENT[stage][kind] });
      expect(sub.status, JSON.stringify(sub.body)).toBe(201);
      const after = await checkPacket(c.id, kind, stage, await post(c.id, { stage, product_category: 'important_class_i' }));
      expect(after.missing, `${stage} after`).toEqual([]);
      expect(after.submission_id).toBe(sub.body.id);
      expect(after.sources.submissions[stage]).toEqual({ id: sub.body.id, digest: sub.body.digest });

      // common fields, from the case
      expect(value(after, 'notification_type')).toMatch(kind === 'exploited_vulnerability' ? /^Actively exploited vulnerability/ : /^Severe incident/);
      expect(value(after, 'title')).toBe(`packet ${kind}`);
      expect(value(after, 'product')).toBe('web-ui\nVersions: web-ui 1.0.0');
      expect(value(after, 'product_category')).toBe('Important product, class I (Annex III)');
      expect(value(after, 'aware_at')).toBe(new Date(c.aware_at).toISOString().replace(/\.\d{3}Z$/, 'Z'));
      // every value of the stage's content shows in the packet
      for (const [name, v] of Object.entries(VALID_CONTENT[stage][kind])) {
        const shown = Array.isArray(v) ? v.join(', ') : typeof v === 'boolean' ? (v ? 'Yes' : 'No') : String(v);
        expect(
          after.fields.some((x: any) => typeof x.value === 'string' && x.value.includes(shown)),
          `${stage}/${kind} ${name}`,
        ).toBe(true);
      }
      if (kind === 'exploited_vulnerability') {
        // from the fleet: the feed's aliases, its severity and the exposed devices
        expect(value(after, 'cve_ids')).toBe('CVE-2021-23337');
        expect(value(after, 'euvd_ids')).toBe('EUVD-2021-4242');
        expect(value(after, 'other_ids')).toBe('GHSA-35jh-r3h4-6jhm');
        if (stage !== 'early_warning') {
          expect(value(after, 'severity')).toMatch(/Vulnerability feeds: CVE-2021-23337: critical \(CVSS 9\.8\)/);
          expect(value(after, 'impact')).toContain('Fleet: 2 devices in 1 group (sp-fleet) run an affected version.');
        }
      } else {
        expect(value(after, 'severity_grounds')).toBe('Malicious code could be executed on the devices (Art. 14(6)(b)).');
        expect(value(after, 'cross_border_impact')).toBe('No: one Member State (NL)');
        if (stage !== 'early_warning') expect(value(after, 'impact')).toContain('Fleet: 2 devices in 1 group (sp-fleet)');
      }
    }
    if (kind === 'exploited_vulnerability') {
      const fin = (await f.api('GET', `/api/v1/cases/${c.id}/srp-packets?stage=final_report`)).body;
      expect(fin.total).toBe(2);
      expect(fin.counts).toEqual({ early_warning: 2, notification: 2, final_report: 2 });
      const last = (await f.api('GET', `/api/v1/cases/${c.id}/srp-packets/${fin.packets[1].id}`)).body;
      expect(value(last, 'corrective_measure_available_at')).toMatch(/^2026-10-01T12:00:00Z$/);
      expect(value(last, 'security_update')).toContain('Release 2.4.1 fixes the parser.');
    }
  });

  it('a correction replaces the values of the submission it supersedes', async () => {
    const c = await f.openCase({ kind: 'severe_incident', title: 'packet correction' });
    const first = (await f.api('POST', `/api/v1/cases/${c.id}/submissions`, { stage: 'early_warning', content: VALID_CONTENT.early_warning.severe_incident }))
      .body;
    const fix = await f.api('POST', `/api/v1/cases/${c.id}/submissions`, {
      stage: 'early_warning',
      content: { ...VALID_CONTENT.early_warning.severe_incident, member_states: ['DE', 'FR'], suspected_malicious: false },
      supersedes_id: first.id,
    });
    expect(fix.status, JSON.stringify(fix.body)).toBe(201);
    const p = (await post(c.id, { stage: 'early_warning' })).body;
    expect(p.submission_id).toBe(fix.body.id);
    expect([value(p, 'member_states'), value(p, 'suspected_malicious'), value(p, 'cross_border_impact')]).toEqual([
      'DE, FR',
      'No',
      'Yes: 2 Member States (DE, FR)',
    ]);
    // what a transport filing the correction is handed with it
    expect((await latestPacketOf(db(), f.t.tenantId, fix.body.id))?.id).toBe(p.id);
    expect(await latestPacketOf(db(), f.t.tenantId, first.id)).toBeUndefined();

    // the evidence archive carries the exact packet, its text and an index, listed in the signed manifest
    const res = await f.t.app.inject({ method: 'GET', url: `/api/v1/cases/${c.id}/export`, headers: f.admin });
    expect(res.statusCode, res.body).toBe(200);
    const files = await untar(res.rawPayload);
    const index = JSON.parse(files.get('packets/index.json')!.toString());
    expect(index).toEqual([
      {
        id: p.id,
        stage: 'early_warning',
        form_version: SRP_FORM.version,
        submission_id: fix.body.id,
        digest: p.digest,
        missing: 0,
        created_by: p.created_by,
        created_at: p.created_at,
        document: `packets/001-early_warning-${p.id}.json`,
        text: `packets/001-early_warning-${p.id}.txt`,
      },
    ]);
    const bytes = files.get(index[0].document)!;
    expect(`sha256:${createHash('sha256').update(bytes).digest('hex')}`).toBe(p.digest);
    expect(files.get(index[0].text)!.toString('utf8')).toBe(p.text);
    const manifest = JSON.parse(files.get('manifest.json')!.toString());
    for (const path of ['packets/index.json', index[0].document, index[0].text]) expect(manifest.files.map((x: any) => x.path)).toContain(path);
  });

  it('bad inputs are refused naming the field; nothing is recorded', async () => {
    const c = await f.openCase({ title: 'packet inputs' });
    const count = async () => (await f.api('GET', `/api/v1/cases/${c.id}/srp-packets`)).body.total;
    const cases: [unknown, RegExp][] = [
      [{ stage: 'intermediate' }, /^body\.stage: /],
      [{ stage: 'advisory' }, /^body\.stage: /],
      [{}, /^body\.stage: is required/],
      [{ stage: 'notification', product_category: 'important' }, /^body\.product_category: /],
      [{ stage: 'notification', extra: 1 }, /^body\.extra: unknown field/],
    ];
    for (const [body, error] of cases) {
      const res = await post(c.id, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toMatch(error);
    }
    expect(await count()).toBe(0);
    expect((await post('00000000-0000-4000-8000-000000000000', { stage: 'notification' })).status).toBe(404);
    expect((await post('not-a-uuid', { stage: 'notification' })).status).toBe(404);
    expect((await f.api('GET', `/api/v1/cases/${c.id}/srp-packets/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    expect((await f.api('GET', `/api/v1/cases/${c.id}/srp-packets/x/text`)).status).toBe(404);
    expect((await f.api('GET', `/api/v1/cases/${c.id}/srp-packets?stage=advisory`)).status).toBe(400);
    // a viewer reads packets but cannot prepare one
    const viewer = await f.t.apiKeyHeaders('viewer');
    expect((await f.api('POST', `/api/v1/cases/${c.id}/srp-packets`, { stage: 'notification' }, viewer)).status).toBe(403);
    expect((await f.api('GET', `/api/v1/cases/${c.id}/srp-packets`, undefined, viewer)).status).toBe(200);
    // another tenant's case is a 404
    const other = await f.t.apiKeyHeaders('admin', await f.t.newTenant());
    expect((await f.api('POST', `/api/v1/cases/${c.id}/srp-packets`, { stage: 'notification' }, other)).status).toBe(404);
    // a closed case is refused
    await f.api('POST', `/api/v1/cases/${c.id}/assessments`, { outcome: 'not_reportable', rationale: 'Not exploitable.' });
    const closed = await post(c.id, { stage: 'notification' });
    expect(closed.status).toBe(409);
    expect(closed.body.error).toMatch(/not_reportable/);
    expect(await count()).toBe(0);
  });

  it('is append-only in the database', async () => {
    const c = await f.openCase({ title: 'packet append-only' });
    expect((await post(c.id, { stage: 'early_warning' })).status).toBe(201);
    await expect(sql`UPDATE case_srp_packets SET missing = 0`.execute(db())).rejects.toThrow(/is append-only/);
    await expect(sql`DELETE FROM case_srp_packets`.execute(db())).rejects.toThrow(/is append-only/);
    await expect(sql`TRUNCATE case_srp_packets`.execute(db())).rejects.toThrow(/is append-only/);
  });
});
