/**
 * The Article 14 clocks through the API with the injected clock (AppContext.now), and awareness
 * corrections moving them. The pure rules at their boundaries: deadlines.unit.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCasesFixture, VALID_CONTENT, type CasesFixture } from '../../fixtures/cases.js';
import { availableDrivers } from '../../helpers/store.js';

describe.each(availableDrivers())('deadlines through the API with the injected clock on %s', (driver) => {
  let f: CasesFixture;
  beforeAll(async () => {
    f = await createCasesFixture(driver);
    f.t.clock.set(new Date('2026-10-01T12:00:00Z'));
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('23:59 vs 24:01 after awareness: remaining time, overdue flag and the overdue / due-within filters', async () => {
    f.t.clock.set(new Date('2026-10-01T12:00:00Z'));
    const c = await f.openCase({ title: 'clock boundary', awareness: { aware_at: '2026-10-01T10:00:00Z', aware_by: 'alice', evidence: 'report' } });
    f.t.clock.set(new Date('2026-10-02T09:59:00Z'));
    let got = (await f.api('GET', `/api/v1/cases/${c.id}`)).body;
    expect(got.next_deadline).toEqual({ obligation: 'early_warning', due_at: '2026-10-02T10:00:00.000Z', remaining_seconds: 60, overdue: false });
    expect(got.deadlines[0]).toMatchObject({ obligation: 'early_warning', status: 'pending', remaining_seconds: 60, overdue: false });
    const ids = async (q: string) => (await f.api('GET', `/api/v1/cases?${q}`)).body.cases.map((x: any) => x.id);
    expect(await ids('overdue=true')).not.toContain(c.id);
    expect(await ids('due_within_hours=1')).toContain(c.id);
    f.t.clock.set(new Date('2026-10-02T10:01:00Z'));
    got = (await f.api('GET', `/api/v1/cases/${c.id}`)).body;
    expect(got.next_deadline).toEqual({ obligation: 'early_warning', due_at: '2026-10-02T10:00:00.000Z', remaining_seconds: -60, overdue: true });
    expect(got.deadlines[0]).toMatchObject({ status: 'overdue', remaining_seconds: -60, overdue: true });
    expect(await ids('overdue=true')).toContain(c.id);
    expect(await ids('overdue=false')).not.toContain(c.id);
    expect(await ids('due_within_hours=1')).not.toContain(c.id);
    // filing the early warning (late) meets it: the next deadline is the notification
    const s = await f.api('POST', `/api/v1/cases/${c.id}/submissions`, {
      stage: 'early_warning',
      content: VALID_CONTENT.early_warning.exploited_vulnerability,
    });
    expect((await f.api('POST', `/api/v1/cases/${c.id}/submissions/${s.body.id}/filings`, { recipients: ['csirt', 'enisa'], member_state: 'DE' })).status).toBe(
      201,
    );
    got = (await f.api('GET', `/api/v1/cases/${c.id}`)).body;
    expect(got.deadlines[0]).toMatchObject({ status: 'met_late', met_at: '2026-10-02T10:01:00.000Z', overdue: false });
    expect(got.next_deadline).toMatchObject({ obligation: 'notification', due_at: '2026-10-04T10:00:00.000Z', overdue: false });
    expect(await ids('overdue=true')).not.toContain(c.id);
  });

  it('awareness: may be in the past, never in the future; a correction is recorded with its reason and the clocks move with it', async () => {
    f.t.clock.set(new Date('2026-10-10T12:00:00Z'));
    const future = await f.api('POST', '/api/v1/cases', {
      kind: 'severe_incident',
      title: 't',
      owner: 'o',
      awareness: { aware_at: '2026-10-10T12:00:01Z', aware_by: 'a', evidence: 'e' },
    });
    expect(future.status).toBe(400);
    expect(future.body.error).toMatch(/^awareness\.aware_at: .* is in the future/);
    const c = await f.openCase({
      kind: 'severe_incident',
      title: 'correction',
      awareness: { aware_at: '2026-10-09T12:00:00Z', aware_by: 'bob', evidence: 'SOC alert' },
    });
    expect(c.next_deadline.due_at).toBe('2026-10-10T12:00:00.000Z');
    const noReason = await f.api('POST', `/api/v1/cases/${c.id}/awareness`, {
      aware_at: '2026-10-09T06:00:00Z',
      aware_by: 'bob',
      evidence: 'earlier log line',
    });
    expect(noReason.status).toBe(400);
    expect(noReason.body.error).toMatch(/reason/);
    const futureFix = await f.api('POST', `/api/v1/cases/${c.id}/awareness`, { aware_at: '2026-10-11T00:00:00Z', aware_by: 'bob', evidence: 'x', reason: 'y' });
    expect(futureFix.status).toBe(400);
    const fixed = await f.api('POST', `/api/v1/cases/${c.id}/awareness`, {
      aware_at: '2026-10-09T06:00:00Z',
      aware_by: 'bob',
      evidence: 'earlier log line',
      reason: 'The SOC alert was raised six hours after the first log line.',
    });
    expect(fixed.status).toBe(200);
    expect(fixed.body.aware_at).toBe('2026-10-09T06:00:00.000Z');
    expect(fixed.body.deadlines.slice(0, 2).map((d: any) => d.due_at)).toEqual(['2026-10-10T06:00:00.000Z', '2026-10-12T06:00:00.000Z']);
    expect(fixed.body.next_deadline).toMatchObject({ obligation: 'early_warning', overdue: true });
    expect(fixed.body.awareness).toMatchObject({
      aware_at: '2026-10-09T06:00:00.000Z',
      corrections: 1,
      reason: 'The SOC alert was raised six hours after the first log line.',
    });
    expect(fixed.body.awareness_history.map((a: any) => [a.aware_at, a.reason, a.supersedes_id === null])).toEqual([
      ['2026-10-09T12:00:00.000Z', null, true],
      ['2026-10-09T06:00:00.000Z', 'The SOC alert was raised six hours after the first log line.', false],
    ]);
    expect(fixed.body.awareness_history[1].supersedes_id).toBe(fixed.body.awareness_history[0].id);
    const audit = (await f.api('GET', `/api/v1/cases/${c.id}/audit`)).body;
    expect(audit.events.at(-1)).toMatchObject({
      action: 'case.awareness-correct',
      detail: { from: '2026-10-09T12:00:00.000Z', to: '2026-10-09T06:00:00.000Z' },
    });
    expect(audit.counts).toEqual({ 'case.awareness-correct': 1, 'case.open': 1 });
  });

  it('corrective measure: the vulnerability final report falls due 14 days after it; recording it again needs a reason', async () => {
    f.t.clock.set(new Date('2026-11-01T00:00:00Z'));
    const c = await f.openCase({ title: 'fix clock' });
    const m = await f.api('POST', `/api/v1/cases/${c.id}/corrective-measure`, { available_at: '2026-10-31T08:00:00Z', description: 'Workaround published.' });
    expect(m.status).toBe(200);
    expect(m.body.deadlines[2]).toMatchObject({ obligation: 'final_report', due_at: '2026-11-14T08:00:00.000Z', status: 'pending' });
    const again = await f.api('POST', `/api/v1/cases/${c.id}/corrective-measure`, { available_at: '2026-10-31T09:00:00Z', description: 'x' });
    expect(again.status).toBe(400);
    expect(again.body.error).toMatch(/^reason: /);
    const later = await f.api('POST', `/api/v1/cases/${c.id}/corrective-measure`, {
      available_at: '2026-11-01T00:00:00Z',
      description: 'Fix released.',
      reason: 'The workaround did not mitigate the issue.',
    });
    expect(later.body.deadlines[2].due_at).toBe('2026-11-15T00:00:00.000Z');
    expect(later.body.corrective_measures.map((x: any) => x.reason)).toEqual([null, 'The workaround did not mitigate the issue.']);
  });

  it('intermediate report requests add a deadline; an intermediate report answering one meets it', async () => {
    f.t.clock.set(new Date('2026-12-01T00:00:00Z'));
    const c = await f.openCase({ title: 'intermediate' });
    const r = await f.api('POST', `/api/v1/cases/${c.id}/intermediate-requests`, {
      requested_by: 'CSIRT DE',
      due_at: '2026-12-03T00:00:00Z',
      reference: 'BSI-42',
    });
    expect(r.status).toBe(201);
    expect(r.body.case.deadlines.at(-1)).toMatchObject({
      obligation: 'intermediate',
      request_id: r.body.request_id,
      due_at: '2026-12-03T00:00:00.000Z',
      status: 'pending',
    });
    const bad = await f.api('POST', `/api/v1/cases/${c.id}/intermediate-requests`, { requested_by: 'CSIRT DE', due_at: '2026-11-30T00:00:00Z' });
    expect(bad.status).toBe(400);
    const s = await f.api('POST', `/api/v1/cases/${c.id}/submissions`, {
      stage: 'intermediate',
      content: { request_id: r.body.request_id, status_update: 'Fix in testing.', sensitivity: 'TLP:AMBER' },
    });
    expect(s.status, JSON.stringify(s.body)).toBe(201);
    expect(s.body.document.deadline).toEqual({ obligation: 'intermediate', due_at: '2026-12-03T00:00:00.000Z', basis: 'due time set by the request' });
    await f.api('POST', `/api/v1/cases/${c.id}/submissions/${s.body.id}/filings`, { recipients: ['csirt'], member_state: 'DE' });
    const got = (await f.api('GET', `/api/v1/cases/${c.id}`)).body;
    expect(got.deadlines.at(-1)).toMatchObject({ obligation: 'intermediate', status: 'met' });
  });
});
