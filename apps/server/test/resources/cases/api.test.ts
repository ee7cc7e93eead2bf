/**
 * Cases through the API: open, list (spec §8 pagination, filters, counts, nearest deadline
 * first), update (204 or 200 with Prefer), assessment outcomes, reopening and closing,
 * corrective measures linked to a release or a rollout, permissions, cross-tenant 404s and bad
 * input (400 naming the field, never a 500).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCasesFixture, VALID_CONTENT, type CasesFixture } from '../../fixtures/cases.js';
import { availableDrivers } from '../../helpers/store.js';
import { newAuthorizer, releasePayload, sign } from '../../fixtures/release-flow.js';

describe.each(availableDrivers())('cases API on %s', (driver) => {
  let f: CasesFixture;
  beforeAll(async () => {
    f = await createCasesFixture(driver);
    f.t.clock.set(new Date('2026-10-01T12:00:00Z'));
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('opens a case with its links normalized (CVE upper-case, GHSA lower-case body, duplicates dropped)', async () => {
    const a = await f.artifact('gw-fw', '2.4.0');
    await f.device('gw-1');
    const group = (await f.api('POST', '/api/v1/groups', { name: 'gw', members: ['gw-1'] })).body;
    const c = await f.openCase({
      artifact_ids: [a.id.toUpperCase()],
      vulnerability_ids: ['cve-2024-3094', 'GHSA-WXRW-8F4C-62P5', 'CVE-2024-3094', 'PYSEC-2021-1'],
      device_names: ['gw-1'],
      group_ids: [group.id],
    });
    expect(c).toMatchObject({
      state: 'open',
      kind: 'exploited_vulnerability',
      artifact_ids: [a.id],
      vulnerability_ids: ['CVE-2024-3094', 'GHSA-wxrw-8f4c-62p5', 'PYSEC-2021-1'],
      device_names: ['gw-1'],
      group_ids: [group.id],
      assessment: null,
    });
    expect(c.awareness).toMatchObject({ aware_by: 'alice@example.test', corrections: 0 });
    const got = await f.api('GET', `/api/v1/cases/${c.id}`);
    expect(got.body).toEqual(c);
    // no feed names these ids: nothing linked yet (resources/findings/case-findings.test.ts links real findings)
    expect((await f.api('GET', `/api/v1/cases/${c.id}/findings`)).body).toMatchObject({
      vulnerabilities: c.vulnerability_ids.map((id: string) => ({ id, vulnerability: null, known_exploited: false })),
      findings: [],
      exposure: [],
      artifacts: [{ id: a.id, devices: 0 }],
      affected: { devices_total: 0, groups: [] },
    });
  });

  it('refuses bad input with a 400 naming the field, never a 500', async () => {
    const base = { kind: 'severe_incident', title: 't', owner: 'o', awareness: { aware_at: '2026-10-01T00:00:00Z', aware_by: 'a', evidence: 'e' } };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ ...base, kind: 'outage' }, /^body\.kind/],
      [{ ...base, bogus: 1 }, /bogus: unknown field/],
      [{ ...base, awareness: undefined }, /awareness: is required/],
      [{ ...base, awareness: { ...base.awareness, aware_at: '2026-02-30T00:00:00Z' } }, /aware_at/],
      [{ ...base, awareness: { ...base.awareness, aware_at: 'yesterday' } }, /aware_at/],
      [{ ...base, vulnerability_ids: ['not an id'] }, /^vulnerability_ids\[0\]: /],
      [{ ...base, artifact_ids: ['00000000-0000-4000-8000-000000000000'] }, /^artifact_ids\[0\]: no artifact/],
      [{ ...base, artifact_ids: ['nope'] }, /artifact_ids/],
      [{ ...base, device_names: ['ghost'] }, /^device_names\[0\]: no device/],
      [{ ...base, group_ids: ['00000000-0000-4000-8000-000000000000'] }, /^group_ids\[0\]: no group/],
      [{ ...base, products: ['Not A Product'] }, /products/],
      [{ ...base, title: '' }, /title/],
      [{ ...base, title: 'x'.repeat(201) }, /title/],
    ];
    for (const [body, error] of cases) {
      const res = await f.api('POST', '/api/v1/cases', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toMatch(error);
    }
    expect((await f.api('POST', '/api/v1/cases', '{"kind":', { ...f.admin, 'content-type': 'application/json' })).status).toBe(400);
    for (const q of ['limit=0', 'offset=-1', 'state=done', 'overdue=maybe', 'due_within_hours=-1', 'product=A B', 'x=1']) {
      const res = await f.api('GET', `/api/v1/cases?${q}`);
      expect(res.status, q).toBe(400);
    }
    for (const path of ['/api/v1/cases/not-a-uuid', '/api/v1/cases/00000000-0000-4000-8000-000000000000', '/api/v1/cases/not-a-uuid/audit']) {
      expect((await f.api('GET', path)).status, path).toBe(404);
    }
    const c = await f.openCase({ title: 'bad bodies' });
    for (const [url, body] of [
      [`/api/v1/cases/${c.id}/assessments`, { outcome: 'maybe', rationale: 'r' }],
      [`/api/v1/cases/${c.id}/assessments`, { outcome: 'reportable', rationale: '' }],
      [`/api/v1/cases/${c.id}/assessments`, { outcome: 'reportable', rationale: 'r', assessed_at: '2026-10-01T10:00:00Z' }],
      [`/api/v1/cases/${c.id}/corrective-measure`, { description: 'd', release_id: '00000000-0000-4000-8000-000000000000' }],
      [`/api/v1/cases/${c.id}/corrective-measure`, { description: 'd', rollout_id: '00000000-0000-4000-8000-000000000000' }],
      [`/api/v1/cases/${c.id}/corrective-measure`, { description: 'd', available_at: '2027-01-01T00:00:00Z' }],
      [`/api/v1/cases/${c.id}/reopen`, {}],
    ] as const) {
      const res = await f.api('POST', url, body);
      expect(res.status, `${url} ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`).toBe(400);
    }
  });

  it('assessment: reportable; not reportable closes the case, which stays with its rationale; reopening is recorded; closing needs a filed final report', async () => {
    const c = await f.openCase({ title: 'assessment' });
    const rep = await f.api('POST', `/api/v1/cases/${c.id}/assessments`, { outcome: 'reportable', rationale: 'Exploited in the wild.', assessor: 'carol' });
    expect(rep.body).toMatchObject({ state: 'reportable', assessment: { outcome: 'reportable', assessor: 'carol', assessed_at: '2026-10-01T12:00:00.000Z' } });
    expect((await f.api('POST', `/api/v1/cases/${c.id}/close`, { reason: 'done' })).body.error).toMatch(/no final report has been filed/);
    const not = await f.api('POST', `/api/v1/cases/${c.id}/assessments`, {
      outcome: 'not_reportable',
      rationale: 'The exploit targets a configuration we never ship.',
    });
    expect(not.body).toMatchObject({
      state: 'not_reportable',
      next_deadline: null,
      assessment: { outcome: 'not_reportable', rationale: 'The exploit targets a configuration we never ship.' },
    });
    expect(not.body.deadlines.map((d: any) => d.status)).toEqual(['not_applicable', 'not_applicable', 'not_applicable']);
    const again = await f.api('POST', `/api/v1/cases/${c.id}/assessments`, { outcome: 'reportable', rationale: 'x' });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatch(/is not_reportable: cannot assess it/);
    expect((await f.api('PATCH', `/api/v1/cases/${c.id}`, { title: 'x' })).status).toBe(409);
    expect(
      (await f.api('POST', `/api/v1/cases/${c.id}/submissions`, { stage: 'early_warning', content: VALID_CONTENT.early_warning.exploited_vulnerability }))
        .status,
    ).toBe(409);
    expect((await f.api('GET', `/api/v1/cases?state=not_reportable`)).body.cases.map((x: any) => x.id)).toContain(c.id);
    const reopened = await f.api('POST', `/api/v1/cases/${c.id}/reopen`, { reason: 'A second exploit reaches the default configuration.' });
    expect(reopened.body).toMatchObject({ state: 'open', next_deadline: { obligation: 'early_warning' } });
    expect((await f.api('POST', `/api/v1/cases/${c.id}/reopen`, { reason: 'x' })).status).toBe(409);
    expect(reopened.body.decisions.map((d: any) => [d.decision, d.from_state])).toEqual([
      ['reportable', 'open'],
      ['not_reportable', 'reportable'],
      ['reopened', 'not_reportable'],
    ]);
    await f.api('POST', `/api/v1/cases/${c.id}/assessments`, { outcome: 'reportable', rationale: 'Default configuration exploitable.' });
    const fin = await f.api('POST', `/api/v1/cases/${c.id}/submissions`, {
      stage: 'final_report',
      content: VALID_CONTENT.final_report.exploited_vulnerability,
    });
    await f.api('POST', `/api/v1/cases/${c.id}/submissions/${fin.body.id}/filings`, { recipients: ['csirt', 'enisa'], member_state: 'FR' });
    const closed = await f.api('POST', `/api/v1/cases/${c.id}/close`, { reason: 'All reports filed.' });
    expect(closed.body).toMatchObject({ state: 'closed', next_deadline: null });
    const audit = (await f.api('GET', `/api/v1/cases/${c.id}/audit`)).body;
    expect(audit.events.map((e: any) => e.action)).toEqual([
      'case.open',
      'case.assess',
      'case.assess',
      'case.reopen',
      'case.assess',
      'case.submission-create',
      'case.submission-file',
      'case.close',
    ]);
  });

  it('corrective measure linked to a published release or its rollout (the moment defaults to the release publication)', async () => {
    await f.device('fix-1');
    const art = await f.artifact('fix-app', '2.4.1');
    const group = (await f.api('POST', '/api/v1/groups', { name: 'fix', members: ['fix-1'] })).body;
    const auth = newAuthorizer();
    await f.api('POST', '/api/v1/authorizer-keys', { name: 'fix', public_key_pem: auth.pem });
    const rel = (
      await f.api('POST', '/api/v1/releases', {
        envelope: sign(releasePayload({ tenant: f.t.tenantId, artifacts: [art], group, version: '2.4.1' }), auth.key),
        expected_product: 'edge-gateway',
      })
    ).body;
    const start = (await f.api('POST', '/api/v1/rollouts', { release_id: rel.id })).body;
    const c = await f.openCase({ title: 'fix link' });
    const byRollout = await f.api('POST', `/api/v1/cases/${c.id}/corrective-measure`, {
      rollout_id: start.rollouts[0].rollout_id,
      description: 'Fix rolled out.',
    });
    expect(byRollout.status, JSON.stringify(byRollout.body)).toBe(200);
    expect(byRollout.body).toMatchObject({
      corrective_release_id: rel.id,
      corrective_rollout_id: start.rollouts[0].rollout_id,
      corrective_measure_at: new Date(rel.created_at).toISOString(),
    });
    const other = await f.openCase({ title: 'release link' });
    const byRelease = await f.api('POST', `/api/v1/cases/${other.id}/corrective-measure`, {
      release_id: rel.id,
      description: 'Fix published.',
      available_at: '2026-10-01T11:00:00Z',
    });
    expect(byRelease.body).toMatchObject({ corrective_release_id: rel.id, corrective_rollout_id: null, corrective_measure_at: '2026-10-01T11:00:00.000Z' });
  });

  it('lists nearest deadline first with spec §8 pagination, filters and counts by state over the tenant', async () => {
    const t2 = await f.t.newTenant();
    const admin2 = await f.t.apiKeyHeaders('admin', t2);
    f.t.clock.set(new Date('2026-10-01T12:00:00Z'));
    const mk = (title: string, aware: string, over: Record<string, unknown> = {}) =>
      f.openCase({ title, products: ['lister'], awareness: { aware_at: aware, aware_by: 'a', evidence: 'e' }, ...over }, admin2);
    const late = await mk('late', '2026-09-30T10:00:00Z');
    const soon = await mk('soon', '2026-10-01T11:00:00Z');
    const sooner = await mk('sooner', '2026-10-01T00:00:00Z', { kind: 'severe_incident', products: ['lister', 'other'] });
    const closed = await mk('closed', '2026-09-01T00:00:00Z');
    await f.api('POST', `/api/v1/cases/${closed.id}/assessments`, { outcome: 'not_reportable', rationale: 'r' }, admin2);
    const list = async (q = '') => (await f.api('GET', `/api/v1/cases?${q}`, undefined, admin2)).body;
    const all = await list();
    expect(all.cases.map((c: any) => c.title)).toEqual(['late', 'sooner', 'soon', 'closed']);
    expect(all).toMatchObject({ total: 4, limit: 50, offset: 0, counts: { open: 3, reportable: 0, not_reportable: 1, closed: 0 } });
    expect((await list('limit=1&offset=1')).cases.map((c: any) => c.title)).toEqual(['sooner']);
    expect((await list('limit=500')).limit).toBe(200);
    expect((await list('overdue=true')).cases.map((c: any) => c.id)).toEqual([late.id]);
    const within = await list('due_within_hours=13');
    expect(within.cases.map((c: any) => c.id)).toEqual([sooner.id]);
    expect(within).toMatchObject({ total: 1, counts: { open: 3, not_reportable: 1 } });
    expect((await list('kind=severe_incident')).cases.map((c: any) => c.id)).toEqual([sooner.id]);
    expect((await list('product=other')).cases.map((c: any) => c.id)).toEqual([sooner.id]);
    expect((await list('state=not_reportable')).cases.map((c: any) => c.id)).toEqual([closed.id]);
    expect((await list('state=open&overdue=false')).total).toBe(2);
    // the first tenant sees none of them, and another tenant's case is a 404 everywhere
    expect((await f.api('GET', '/api/v1/cases?product=lister')).body.total).toBe(0);
    for (const [method, url, body] of [
      ['GET', `/api/v1/cases/${soon.id}`, undefined],
      ['PATCH', `/api/v1/cases/${soon.id}`, { title: 'x' }],
      ['POST', `/api/v1/cases/${soon.id}/assessments`, { outcome: 'reportable', rationale: 'x' }],
      ['POST', `/api/v1/cases/${soon.id}/awareness`, { aware_at: '2026-10-01T00:00:00Z', aware_by: 'a', evidence: 'e', reason: 'r' }],
      ['POST', `/api/v1/cases/${soon.id}/submissions`, { stage: 'early_warning', content: VALID_CONTENT.early_warning.exploited_vulnerability }],
      ['GET', `/api/v1/cases/${soon.id}/submissions`, undefined],
      ['GET', `/api/v1/cases/${soon.id}/attachments`, undefined],
      ['GET', `/api/v1/cases/${soon.id}/audit`, undefined],
      ['GET', `/api/v1/cases/${soon.id}/findings`, undefined],
      ['GET', `/api/v1/cases/${soon.id}/export`, undefined],
    ] as const) {
      expect((await f.api(method, url, body)).status, `${method} ${url}`).toBe(404);
    }
  });

  it('update answers 204, or 200 with the case under Prefer: return=representation; each change audited with old and new value', async () => {
    const c = await f.openCase({ title: 'patch me' });
    const plain = await f.api('PATCH', `/api/v1/cases/${c.id}`, { owner: 'new-owner' });
    expect(plain.status).toBe(204);
    expect(plain.raw.length).toBe(0);
    const rep = await f.api(
      'PATCH',
      `/api/v1/cases/${c.id}`,
      { title: 'patched', vulnerability_ids: ['CVE-2026-0001'] },
      { ...f.admin, prefer: 'return=representation' },
    );
    expect(rep.status).toBe(200);
    expect(rep.headers['preference-applied']).toBe('return=representation');
    expect(rep.body).toMatchObject({ title: 'patched', owner: 'new-owner', vulnerability_ids: ['CVE-2026-0001'] });
    const audit = (await f.api('GET', `/api/v1/cases/${c.id}/audit`)).body.events.filter((e: any) => e.action === 'case.update');
    expect(audit.map((e: any) => e.detail.changed)).toEqual([
      { owner: { from: 'psirt@example.test', to: 'new-owner' } },
      { title: { from: 'patch me', to: 'patched' }, vulnerability_ids: { from: ['CVE-2026-12345'], to: ['CVE-2026-0001'] } },
    ]);
    expect((await f.api('PATCH', `/api/v1/cases/${c.id}`, { kind: 'severe_incident' })).status).toBe(400);
    expect((await f.api('PATCH', `/api/v1/cases/${c.id}`, { aware_at: '2026-01-01T00:00:00Z' })).status).toBe(400);
  });

  it('permissions: a viewer reads (evidence.read) and cannot change (403 evidence.write); no credential is 401', async () => {
    const c = await f.openCase({ title: 'perm' });
    const viewer = await f.t.apiKeyHeaders('viewer');
    expect((await f.api('GET', `/api/v1/cases/${c.id}`, undefined, viewer)).status).toBe(200);
    expect((await f.api('GET', '/api/v1/cases', undefined, viewer)).status).toBe(200);
    const denied = await f.api('POST', `/api/v1/cases/${c.id}/assessments`, { outcome: 'reportable', rationale: 'r' }, viewer);
    expect(denied.status).toBe(403);
    expect(denied.body.error).toBe('missing permission: evidence.write');
    expect((await f.api('GET', '/api/v1/cases', undefined, {})).status).toBe(401);
    const operator = await f.t.apiKeyHeaders('operator');
    expect((await f.api('POST', `/api/v1/cases/${c.id}/assessments`, { outcome: 'reportable', rationale: 'r' }, operator)).status).toBe(200);
    const routes = f.t.app.collectedRoutes.filter((r) => r.url.startsWith('/api/v1/cases') || r.url === '/api/v1/evidence-key');
    expect(routes.length).toBeGreaterThan(20);
    for (const r of routes) expect(r.permission, `${r.method} ${r.url}`).toBe(r.method === 'GET' ? 'evidence.read' : 'evidence.write');
  });
});
