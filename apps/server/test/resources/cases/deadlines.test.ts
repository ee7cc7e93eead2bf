/**
 * The Article 14 clocks: pure rules at their boundaries (UTC, no daylight-saving shift, end of
 * month), then the same clocks through the API with the injected clock (AppContext.now), and
 * awareness corrections moving them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addOneMonthUtc, caseDeadlines, nextDue, type DeadlineFacts } from '../../../src/resources/cases/deadlines.js';
import { createCasesFixture, VALID_CONTENT, type CasesFixture } from '../../fixtures/cases.js';
import { availableDrivers } from '../../helpers/store.js';

const AWARE = new Date('2026-10-01T10:00:00Z');
const at = (s: string) => new Date(s);
const MIN = 60_000;
const HOUR = 60 * MIN;

function facts(over: Partial<DeadlineFacts> = {}): DeadlineFacts {
  return { kind: 'exploited_vulnerability', state: 'open', awareAt: AWARE, correctiveAt: null, firstFiled: {}, intermediateRequests: [], ...over };
}
const byObligation = (f: DeadlineFacts, now: Date) =>
  Object.fromEntries(
    caseDeadlines(f, now)
      .filter((d) => d.obligation !== 'intermediate')
      .map((d) => [d.obligation, d]),
  );

describe('deadlines (pure, UTC)', () => {
  it('early warning: 23:59 after awareness is on time with 60 s left, 24:01 is overdue by 60 s, 24:00 exactly is still on time', () => {
    const before = byObligation(facts(), new Date(AWARE.getTime() + 23 * HOUR + 59 * MIN)).early_warning!;
    expect(before).toMatchObject({ status: 'pending', overdue: false, remaining_ms: 60_000, due_at: at('2026-10-02T10:00:00Z') });
    const after = byObligation(facts(), new Date(AWARE.getTime() + 24 * HOUR + MIN)).early_warning!;
    expect(after).toMatchObject({ status: 'overdue', overdue: true, remaining_ms: -60_000 });
    expect(byObligation(facts(), new Date(AWARE.getTime() + 24 * HOUR)).early_warning!.overdue).toBe(false);
    expect(byObligation(facts(), new Date(AWARE.getTime() + 24 * HOUR + 1)).early_warning!.overdue).toBe(true);
  });

  it('notification: 71:59 on time, 72:01 overdue', () => {
    expect(byObligation(facts(), new Date(AWARE.getTime() + 71 * HOUR + 59 * MIN)).notification!.status).toBe('pending');
    expect(byObligation(facts(), new Date(AWARE.getTime() + 72 * HOUR + MIN)).notification!.status).toBe('overdue');
  });

  it('is UTC: 24 hours across the EU daylight-saving change are 24 hours', () => {
    // clocks in the EU went back one hour on 25 October 2026 at 01:00 UTC
    const d = byObligation(facts({ awareAt: at('2026-10-24T12:00:00Z') }), at('2026-10-24T13:00:00Z'));
    expect(d.early_warning!.due_at).toEqual(at('2026-10-25T12:00:00Z'));
    expect(d.notification!.due_at).toEqual(at('2026-10-27T12:00:00Z'));
  });

  it('vulnerability final report: waits for the corrective measure, then 14 days after it', () => {
    const waiting = byObligation(facts(), AWARE).final_report!;
    expect(waiting).toMatchObject({ status: 'waiting', due_at: null, waiting_for: 'corrective_measure', overdue: false, remaining_ms: null });
    const f = facts({ correctiveAt: at('2026-10-05T08:30:00Z') });
    expect(byObligation(f, AWARE).final_report!.due_at).toEqual(at('2026-10-19T08:30:00Z'));
    expect(byObligation(f, at('2026-10-19T08:30:00.001Z')).final_report!.status).toBe('overdue');
  });

  it('severe incident final report: one calendar month after the notification was filed, the 31st clamped to the month end', () => {
    const incident = facts({ kind: 'severe_incident' });
    expect(byObligation(incident, AWARE).final_report).toMatchObject({ status: 'waiting', waiting_for: 'notification', article: 'Art. 14(4)(c)' });
    const notified = { ...incident, firstFiled: { notification: at('2026-01-31T09:00:00Z') } };
    expect(byObligation(notified, AWARE).final_report!.due_at).toEqual(at('2026-02-28T09:00:00Z'));
    expect(addOneMonthUtc(at('2028-01-31T00:00:00Z'))).toEqual(at('2028-02-29T00:00:00Z'));
    expect(addOneMonthUtc(at('2026-12-15T23:59:59Z'))).toEqual(at('2027-01-15T23:59:59Z'));
    expect(addOneMonthUtc(at('2026-03-31T12:00:00Z'))).toEqual(at('2026-04-30T12:00:00Z'));
  });

  it('met, met late, not applicable once closed, and the nearest open deadline', () => {
    const f = facts({ firstFiled: { early_warning: at('2026-10-01T20:00:00Z'), notification: at('2026-10-04T11:00:00Z') } });
    const d = byObligation(f, at('2026-10-10T00:00:00Z'));
    expect([d.early_warning!.status, d.notification!.status]).toEqual(['met', 'met_late']);
    expect(nextDue(caseDeadlines(f, AWARE))).toBeNull();
    expect(nextDue(caseDeadlines(facts(), AWARE))!.obligation).toBe('early_warning');
    const closed = byObligation(facts({ state: 'not_reportable' }), at('2027-01-01T00:00:00Z'));
    expect(closed.early_warning).toMatchObject({ status: 'not_applicable', overdue: false });
    expect(nextDue(caseDeadlines(facts({ state: 'not_reportable' }), AWARE))).toBeNull();
  });

  it('intermediate reports: each request is a deadline of its own, met by a filing that answers it', () => {
    const f = facts({
      firstFiled: { early_warning: AWARE, notification: AWARE },
      intermediateRequests: [
        { id: 'r2', dueAt: at('2026-10-09T00:00:00Z'), metAt: null },
        { id: 'r1', dueAt: at('2026-10-08T00:00:00Z'), metAt: at('2026-10-07T00:00:00Z') },
      ],
    });
    const all = caseDeadlines(f, at('2026-10-08T12:00:00Z')).filter((d) => d.obligation === 'intermediate');
    expect(all.map((d) => [d.request_id, d.status])).toEqual([
      ['r1', 'met'],
      ['r2', 'pending'],
    ]);
    expect(nextDue(caseDeadlines(f, AWARE))!.request_id).toBe('r2');
  });
});

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
