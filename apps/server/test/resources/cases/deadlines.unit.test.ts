/**
 * The Article 14 clocks as pure rules at their boundaries (UTC, no daylight-saving shift, end
 * of month). The same clocks through the API: deadlines.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { addOneMonthUtc, caseDeadlines, nextDue, type DeadlineFacts } from '../../../src/resources/cases/deadlines.js';

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
