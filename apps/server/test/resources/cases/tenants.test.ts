/**
 * Tenant isolation of every Article 14 route that names a case: another tenant's admin, given
 * the real ids of this tenant's case, submission, attachment and intermediate request, gets a
 * 404 from each route with a body that would otherwise be accepted, and nothing of the case
 * changes; this tenant's submission or attachment ids under another tenant's own case are 404s
 * too. The route list comes from the server, so a new case route is covered or the test fails.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCasesFixture, VALID_CONTENT, type CasesFixture } from '../../fixtures/cases.js';
import { attachmentMultipart } from '../../fixtures/cases-multipart.js';
import { availableDrivers } from '../../helpers/store.js';

/** A body each write route accepts from the case's own tenant (multipart for the attachment upload). */
function requestFor(method: string, route: string, now: Date): { payload?: unknown; headers?: Record<string, string> } {
  if (method === 'GET') return {};
  if (route.endsWith('/attachments')) {
    const { payload, contentType } = attachmentMultipart([{ name: 'file', filename: 'notes.txt', type: 'text/plain', body: 'notes\n' }]);
    return { payload, headers: { 'content-type': contentType } };
  }
  const bodies: Record<string, unknown> = {
    'PATCH /cases/:id': { title: 'renamed' },
    'POST /cases/:id/awareness': { aware_at: new Date(now.getTime() - 7200_000).toISOString(), aware_by: 'mallory', evidence: 'e', reason: 'r' },
    'POST /cases/:id/assessments': { outcome: 'not_reportable', rationale: 'x' },
    'POST /cases/:id/reopen': { reason: 'x' },
    'POST /cases/:id/close': { reason: 'x' },
    'POST /cases/:id/corrective-measure': { description: 'x' },
    'POST /cases/:id/intermediate-requests': { requested_by: 'x', due_at: new Date(now.getTime() + 86_400_000).toISOString() },
    'POST /cases/:id/submissions': { stage: 'early_warning', content: VALID_CONTENT.early_warning.exploited_vulnerability },
    'POST /cases/:id/submissions/:sid/filings': { recipients: ['csirt'], member_state: 'DE' },
    'POST /cases/:id/attachments/:aid/redaction': { reason: 'x' },
    'POST /cases/:id/srp-packets': { stage: 'early_warning' },
  };
  const body = bodies[`${method} ${route}`];
  if (body === undefined) throw new Error(`no body for ${method} ${route}: add one`);
  return { payload: body };
}

describe.each(availableDrivers())('Article 14 routes are tenant-scoped on %s', (driver) => {
  let f: CasesFixture;
  const ids: Record<string, string> = {};
  const routes = () =>
    f.t.app.collectedRoutes
      .map((r) => ({ method: r.method, route: r.url.replace(/^\/api\/v1/, '') }))
      .filter((r) => r.route.startsWith('/cases/:id') && r.method !== 'HEAD');
  const fill = (route: string, o: Record<string, string>) =>
    route.replace(':id', o['id']!).replace(':sid', o['sid']!).replace(':aid', o['aid']!).replace(':pid', o['pid']!);

  beforeAll(async () => {
    f = await createCasesFixture(driver);
    const c = await f.openCase();
    ids['id'] = c.id;
    const s = await f.api('POST', `/api/v1/cases/${c.id}/submissions`, {
      stage: 'early_warning',
      content: VALID_CONTENT.early_warning.exploited_vulnerability,
    });
    expect(s.status, JSON.stringify(s.body)).toBe(201);
    ids['sid'] = s.body.id;
    expect((await f.api('POST', `/api/v1/cases/${c.id}/submissions/${s.body.id}/filings`, { recipients: ['csirt'], member_state: 'DE' })).status).toBe(201);
    const { payload, contentType } = attachmentMultipart([{ name: 'file', filename: 'triage.txt', type: 'text/plain', body: 'triage\n' }]);
    const a = await f.t.app.inject({ method: 'POST', url: `/api/v1/cases/${c.id}/attachments`, headers: { ...f.admin, 'content-type': contentType }, payload });
    expect(a.statusCode, a.body).toBe(201);
    ids['aid'] = JSON.parse(a.body).id;
    const p = await f.api('POST', `/api/v1/cases/${c.id}/srp-packets`, { stage: 'early_warning' });
    expect(p.status, JSON.stringify(p.body)).toBe(201);
    ids['pid'] = p.body.id;
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it("another tenant's admin gets 404 from every case route, whatever it sends, and the case does not change", async () => {
    const before = (await f.api('GET', `/api/v1/cases/${ids['id']}/audit?limit=200`)).body;
    const other = await f.t.apiKeyHeaders('admin', await f.t.newTenant());
    const list = routes();
    // every route naming a case: reads, changes, submissions, filings, attachments, export
    expect(list.length).toBeGreaterThanOrEqual(20);
    for (const { method, route } of list) {
      const { payload, headers } = requestFor(method, route, f.t.clock.now());
      const res = await f.t.app.inject({
        method: method as 'GET',
        url: `/api/v1${fill(route, ids)}`,
        headers: { ...other, ...headers },
        ...(payload === undefined ? {} : { payload: payload as never }),
      });
      expect(res.statusCode, `${method} ${route}: ${res.body.slice(0, 200)}`).toBe(404);
      expect(JSON.parse(res.body).error, `${method} ${route}`).toMatch(/not found/i);
    }
    const after = (await f.api('GET', `/api/v1/cases/${ids['id']}/audit?limit=200`)).body;
    expect(after.total).toBe(before.total);
    expect((await f.api('GET', `/api/v1/cases/${ids['id']}`)).body).toMatchObject({ title: 'Heap overflow in the gateway firmware', state: 'open' });
  });

  it("this tenant's submission, attachment and packet ids under the other tenant's own case are 404s", async () => {
    const tenant = await f.t.newTenant();
    const other = await f.t.apiKeyHeaders('admin', tenant);
    const theirs = await f.openCase({}, other);
    const mixed = { ...ids, id: theirs.id };
    for (const { method, route } of routes().filter((r) => r.route.includes(':sid') || r.route.includes(':aid') || r.route.includes(':pid'))) {
      const { payload, headers } = requestFor(method, route, f.t.clock.now());
      const res = await f.t.app.inject({
        method: method as 'GET',
        url: `/api/v1${fill(route, mixed)}`,
        headers: { ...other, ...headers },
        ...(payload === undefined ? {} : { payload: payload as never }),
      });
      expect(res.statusCode, `${method} ${route}: ${res.body.slice(0, 200)}`).toBe(404);
    }
  });
});
