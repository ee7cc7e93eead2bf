/**
 * Bulk actions on a filtered selection (docs/inventory.md "Bulk actions"): the selection is
 * frozen at creation, the job runs in batches through the leased runner, every device's outcome
 * is recorded and audited, progress counts only what committed. Decommission needs the typed
 * confirmation; an oversized selection is refused naming `filter`.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDeviceBulkJobs } from '../../../src/jobs/device-bulk.js';
import { createTestApp, jsonApi, type ApiCall, type TestApp } from '../../helpers/app.js';
import { availableDrivers } from '../../helpers/store.js';
import { SERVER_LIMITS, SERVER_TUNING } from '../../../src/limits.js';

describe.each(availableDrivers())('device bulk actions on %s', (driver) => {
  let t: TestApp;
  let api: ApiCall;
  let viewer: { authorization: string };
  const db = () => t.testStore.store.db;
  beforeAll(async () => {
    t = await createTestApp(driver);
    api = jsonApi(t, await t.apiKeyHeaders('operator'));
    viewer = await t.apiKeyHeaders('viewer');
    // 250 devices: more than two batches; every third one in "lyon"
    await sql`INSERT INTO devices (tenant_id, name, status, inventory)
      SELECT ${t.tenantId}::uuid, 'b-' || lpad(i::text, 3, '0'), 'online',
        jsonb_build_object('attributes', jsonb_build_object('hw_model', 'gw-3'), 'custom', jsonb_build_object('site', CASE WHEN i % 3 = 0 THEN 'lyon' ELSE 'paris' END))
      FROM generate_series(1, 250) AS i`.execute(db());
  }, 60_000);
  afterAll(async () => {
    await t?.dispose();
  });

  /** Runs the job to its end; each call makes progress or the job is done (never a wall-clock wait). */
  async function runToEnd(id: string) {
    for (let i = 0; i < 20; i++) {
      const job = (await api('GET', `/api/v1/device-bulk-jobs/${id}`)).body as { state: string };
      if (job.state === 'done') return job;
      expect(await runDeviceBulkJobs(db(), t.clock.now, { owner: 'test' })).toBeGreaterThan(0);
    }
    throw new Error('job did not finish');
  }
  const outcomes = async (id: string, outcome?: string) =>
    (
      (await api('GET', `/api/v1/device-bulk-jobs/${id}/devices?limit=200${outcome ? `&outcome=${outcome}` : ''}`)).body as {
        devices: { name: string; outcome: string }[];
      }
    ).devices;

  it('tags the selection in batches: progress, every outcome recorded and audited; tagging again is unchanged', async () => {
    const created = await api('POST', '/api/v1/device-bulk-jobs', { action: 'tag', filter: 'custom.site = "lyon"', tag: 'south' });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    expect(created.body).toMatchObject({ action: 'tag', tag: 'south', state: 'queued', total: 83, succeeded: 0, failed: 0 });
    const id = created.body.id as string;
    // one batch: progress is visible and counts what committed
    await runDeviceBulkJobs(db(), t.clock.now, { owner: 'test', maxBatches: 1 });
    const mid = (await api('GET', `/api/v1/device-bulk-jobs/${id}`)).body;
    expect(mid).toMatchObject({ state: 'running', succeeded: SERVER_TUNING.deviceBulkBatch > 83 ? 83 : SERVER_TUNING.deviceBulkBatch });
    const done = await runToEnd(id);
    expect(done).toMatchObject({ state: 'done', total: 83, succeeded: 83, failed: 0 });
    const listed = (await api('GET', `/api/v1/devices?filter=${encodeURIComponent('tags has "south"')}&limit=200`)).body;
    expect(listed.total).toBe(83);
    expect((await outcomes(id)).every((d) => d.outcome === 'succeeded')).toBe(true);
    const audit = await db()
      .selectFrom('audit_events')
      .select(['action', 'actor'])
      .where('action', 'in', ['device.bulk.tag', 'device.tag.add', 'device.bulk.create', 'device.bulk.complete'])
      .execute();
    const count = (a: string) => audit.filter((r) => r.action === a).length;
    expect([count('device.bulk.create'), count('device.bulk.tag'), count('device.tag.add'), count('device.bulk.complete')]).toEqual([1, 83, 83, 1]);
    expect(new Set(audit.map((r) => r.actor)).size).toBe(1);
    const again = (await api('POST', '/api/v1/device-bulk-jobs', { action: 'tag', filter: 'custom.site = "lyon"', tag: 'south' })).body;
    await runToEnd(again.id);
    expect((await outcomes(again.id, 'unchanged')).length).toBe(83);
  });

  it('adds to and removes from a static group; a dynamic group is refused', async () => {
    const g = (await api('POST', '/api/v1/groups', { name: 'bulk-static', members: ['b-003'] })).body;
    const add = (await api('POST', '/api/v1/device-bulk-jobs', { action: 'group.add', filter: 'tags has "south" and name ~ "b-0"', group_id: g.id })).body;
    await runToEnd(add.id);
    const expected = (await api('GET', `/api/v1/devices?filter=${encodeURIComponent('tags has "south" and name ~ "b-0"')}&limit=200`)).body.total as number;
    const after = (await api('GET', `/api/v1/groups/${g.id}`)).body;
    expect(after.member_count).toBe(expected);
    expect((await outcomes(add.id, 'unchanged')).map((d) => d.name)).toEqual(['b-003']);
    const rm = (await api('POST', '/api/v1/device-bulk-jobs', { action: 'group.remove', filter: 'name ~ "b-00"', group_id: g.id })).body;
    await runToEnd(rm.id);
    expect((await api('GET', `/api/v1/groups/${g.id}`)).body.members.some((m: string) => m.startsWith('b-00'))).toBe(false);
    const dyn = (await api('POST', '/api/v1/groups', { name: 'bulk-dyn', filter: 'tags has "south"' })).body;
    const refused = await api('POST', '/api/v1/device-bulk-jobs', { action: 'group.add', filter: 'name = "b-001"', group_id: dyn.id });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatch(/^group_id: .*dynamic/);
  });

  it('decommission needs the typed confirmation naming the selection size', async () => {
    const filter = 'name ~ "b-24"';
    const missing = await api('POST', '/api/v1/device-bulk-jobs', { action: 'decommission', filter });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('confirm: type "decommission 10" to decommission the 10 devices this filter selects');
    expect((await api('POST', '/api/v1/device-bulk-jobs', { action: 'decommission', filter, confirm: 'decommission 9' })).status).toBe(400);
    const ok = await api('POST', '/api/v1/device-bulk-jobs', { action: 'decommission', filter, confirm: 'decommission 10' });
    expect(ok.status).toBe(202);
    await runToEnd(ok.body.id);
    const left = (await api('GET', `/api/v1/devices?filter=${encodeURIComponent(`${filter} and status = "decommissioned"`)}`)).body;
    expect(left.total).toBe(10);
    expect(await db().selectFrom('audit_events').select('id').where('action', '=', 'device.decommission').execute()).toHaveLength(10);
  });

  it('requests logs from named devices (narrowed by a filter): each outcome names its log request; a decommissioned device fails in words', async () => {
    // b-241..b-250 were decommissioned above; b-001, b-002 are live; b-003 is outside the filter
    const created = await api('POST', '/api/v1/device-bulk-jobs', {
      action: 'logs',
      filter: 'custom.site = "paris" or name = "b-241"',
      devices: ['b-001', 'b-002', 'b-003', 'b-241'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    expect(created.body).toMatchObject({ action: 'logs', total: 3 });
    await runToEnd(created.body.id);
    const rows = (await api('GET', `/api/v1/device-bulk-jobs/${created.body.id}/devices`)).body.devices as { name: string; outcome: string; detail: string }[];
    expect(rows.map((r) => [r.name, r.outcome])).toEqual([
      ['b-001', 'succeeded'],
      ['b-002', 'succeeded'],
      ['b-241', 'failed'],
    ]);
    expect(rows[2]!.detail).toBe('device "b-241" is decommissioned');
    const id = /^log request ([0-9a-f-]{36})$/.exec(rows[0]!.detail)?.[1];
    expect(id).toBeDefined();
    const lr = await api('GET', `/api/v1/devices/b-001/log-requests/${id}`);
    expect(lr.status).toBe(200);
    expect(await db().selectFrom('audit_events').select('id').where('action', '=', 'device.log-request').execute()).toHaveLength(2);
    // devices alone name the selection; the job's filter is empty then
    const named = await api('POST', '/api/v1/device-bulk-jobs', { action: 'tag', devices: ['b-004', 'b-005'], tag: 'picked' });
    expect(named.status, JSON.stringify(named.body)).toBe(202);
    expect(named.body).toMatchObject({ filter: '', total: 2 });
    await runToEnd(named.body.id);
    expect((await api('GET', `/api/v1/devices?filter=${encodeURIComponent('tags has "picked"')}`)).body.total).toBe(2);
  });

  it('hostile job bodies are a 400 naming the field (never a 500) and write nothing', async () => {
    const jobsBefore = (await db().selectFrom('device_bulk_jobs').select('id').execute()).length;
    const tooMany = Array.from({ length: SERVER_LIMITS.devices.bulkNames + 1 }, (_, i) => `b-${i}`);
    const cases: [unknown, RegExp][] = [
      [{ action: 'tag', tag: 'x' }, /^filter: required/],
      [{ action: 'tag', filter: 42, tag: 'x' }, /^(body\.)?filter: /],
      [{ action: 'tag', filter: ['name = "b-001"'], tag: 'x' }, /^(body\.)?filter: /],
      [{ action: 'tag', filter: null, tag: 'x' }, /^(body\.)?filter: /],
      [{ action: 'tag', filter: '', tag: 'x' }, /^filter: column 1: empty/],
      [{ action: 'tag', filter: `name = "${'x'.repeat(100_000)}"`, tag: 'x' }, /^filter: /],
      [{ action: 'tag', filter: 'name = "nobody-at-all"', tag: 'x' }, /^filter: selects no device/],
      [{ action: 'tag', devices: 'b-001', tag: 'x' }, /^(body\.)?devices: /],
      [{ action: 'tag', devices: [], tag: 'x' }, /^devices: empty/],
      [{ action: 'tag', devices: [7], tag: 'x' }, /^(body\.)?devices(\.0|\[0\])?: /],
      [{ action: 'tag', devices: ["b-001' OR '1'='1"], tag: 'x' }, /^devices\[0\]: must match/],
      [{ action: 'tag', devices: ['b-001', 'b-002; DROP TABLE devices'], tag: 'x' }, /^devices\[1\]: must match/],
      [{ action: 'tag', devices: ['x'.repeat(64)], tag: 'x' }, /^(body\.)?devices(\.0|\[0\])?: /],
      [{ action: 'tag', devices: tooMany, tag: 'x' }, /^(body\.)?devices: /],
      [{ action: 'tag', devices: ['no-such-device'], tag: 'x' }, /^devices: selects no device/],
      [{ action: 'tag', filter: 'name = "b-001"', tag: 'x'.repeat(64) }, /^(body\.)?tag: /],
      [{ action: 'tag', filter: 'name = "b-001"', tag: 'a"b' }, /^tag: /],
      [{ action: 'group.add', filter: 'name = "b-001"' }, /^group_id: /],
      [{ action: 'group.add', filter: 'name = "b-001"', group_id: "' OR 1=1 --" }, /^group_id: /],
      [{ action: 'group.add', filter: 'name = "b-001"', group_id: 7 }, /^(body\.)?group_id: /],
      [{ action: 'decommission', filter: 'name = "b-001"', confirm: 'x'.repeat(65) }, /^(body\.)?confirm: /],
      [{ action: 'decommission', filter: 'name = "b-001"', confirm: 'DECOMMISSION 1' }, /^confirm: type "decommission 1"/],
      [
        { action: 'decommission', devices: ['b-001', 'b-002'], confirm: 'decommission all' },
        /^confirm: type "decommission 2" to decommission the 2 devices named/,
      ],
      [{ filter: 'name = "b-001"', tag: 'x' }, /^(body\.)?action: /],
      [{ action: 'TAG', filter: 'name = "b-001"', tag: 'x' }, /^(body\.)?action: /],
      [{ action: 'tag', filter: 'name = "b-001"', tag: 'x', extra: 1 }, /^body\.extra: unknown field/],
      [{ action: 'tag', filter: 'name = "b-001"\u0000', tag: 'x' }, /^(body\.)?filter: /],
      [[{ action: 'tag', filter: 'name = "b-001"', tag: 'x' }], /^body: must be object/],
      ['not json at all', /^body: malformed JSON/],
    ];
    for (const [body, problem] of cases) {
      const r = await t.app.inject({
        method: 'POST',
        url: '/api/v1/device-bulk-jobs',
        headers: { ...(await t.apiKeyHeaders('operator')), 'content-type': 'application/json' },
        payload: typeof body === 'string' ? body : JSON.stringify(body),
      });
      const label = JSON.stringify(body).slice(0, 80);
      expect(r.statusCode, `${label}: ${r.body.slice(0, 200)}`).toBe(400);
      expect(JSON.parse(r.body).error, label).toMatch(problem);
    }
    // the job's read routes: a bad id is 404, a bad outcome a 400 naming it
    expect((await api('GET', '/api/v1/device-bulk-jobs/nope')).status).toBe(404);
    expect((await api('GET', `/api/v1/device-bulk-jobs/${encodeURIComponent("1' OR '1'='1")}/devices`)).status).toBe(404);
    const job = (await api('POST', '/api/v1/device-bulk-jobs', { action: 'untag', filter: 'name = "b-001"', tag: 'nothing-here' })).body;
    const badOutcome = await api('GET', `/api/v1/device-bulk-jobs/${job.id}/devices?outcome=everything`);
    expect(badOutcome.status).toBe(400);
    expect(badOutcome.body.error).toMatch(/outcome/);
    expect(await db().selectFrom('device_bulk_jobs').select('id').execute()).toHaveLength(jobsBefore + 1);
    await runToEnd(job.id);
  });

  it('refuses an oversized selection naming filter, bad requests naming their field, viewers; changes nothing', async () => {
    const jobsBefore = await db().selectFrom('device_bulk_jobs').select('id').execute();
    // more devices than one bulk action may take
    await sql`INSERT INTO devices (tenant_id, name, status) SELECT ${t.tenantId}::uuid, 'z-' || lpad(i::text, 5, '0'), 'online'
      FROM generate_series(1, ${SERVER_LIMITS.devices.bulkSelection + 1}) AS i`.execute(db());
    const big = await api('POST', '/api/v1/device-bulk-jobs', { action: 'tag', filter: 'name ~ "z-"', tag: 'x' });
    expect(big.status).toBe(400);
    expect(big.body.error).toBe(`filter: selects more than ${SERVER_LIMITS.devices.bulkSelection} devices, the most one bulk action takes; narrow it`);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ action: 'tag', filter: 'name ~ ', tag: 'x' }, /^filter: column 8: /],
      [{ action: 'tag', filter: 'name = "x"; --', tag: 'x' }, /^filter: column 11: /],
      [{ action: 'tag', filter: 'name = "b-001"', tag: 'NOPE' }, /^tag: /],
      [{ action: 'tag', filter: 'name = "b-001"' }, /^tag: /],
      [{ action: 'group.add', filter: 'name = "b-001"', group_id: 'nope' }, /^group_id: /],
      [{ action: 'explode', filter: 'name = "b-001"' }, /action/],
    ];
    for (const [body, problem] of cases) {
      const r = await api('POST', '/api/v1/device-bulk-jobs', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error, JSON.stringify(body)).toMatch(problem);
    }
    const asViewer = await t.app.inject({
      method: 'POST',
      url: '/api/v1/device-bulk-jobs',
      headers: viewer,
      payload: { action: 'tag', filter: 'name = "b-001"', tag: 'x' },
    });
    expect(asViewer.statusCode).toBe(403);
    expect(await db().selectFrom('device_bulk_jobs').select('id').execute()).toHaveLength(jobsBefore.length);
    expect((await api('GET', '/api/v1/device-bulk-jobs/00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });
});
