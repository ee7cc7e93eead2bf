/**
 * The Article 14 clocks of Regulation (EU) 2024/2847, computed in UTC from a case's facts. Pure:
 * the clock is a parameter (AppContext.now on the server, an injected clock in tests), and
 * the one place the deadlines are defined; the list's `next_due_at` column, the case view and
 * the submission documents all read them from here.
 *
 * - early warning: awareness + 24 h (Art. 14(2)(a), 14(4)(a));
 * - notification: awareness + 72 h (Art. 14(2)(b), 14(4)(b));
 * - final report: actively exploited vulnerability, 14 days after the corrective or mitigating
 *   measure is available (Art. 14(2)(c)); severe incident, one month after the incident
 *   notification was submitted (Art. 14(4)(c));
 * - intermediate report: the due time of each recorded request of the CSIRT.
 *
 * A deadline is met by the earliest filing of a submission of its stage (a filing to the
 * CSIRT or to ENISA); corrections filed later do not move it.
 */

export const CASE_KINDS = ['exploited_vulnerability', 'severe_incident'] as const;
export type CaseKind = (typeof CASE_KINDS)[number];

export const CASE_STATES = ['open', 'reportable', 'not_reportable', 'closed'] as const;
export type CaseState = (typeof CASE_STATES)[number];

/** States whose clocks run: a case being assessed, and a reportable one until it is closed. */
export const ACTIVE_STATES: readonly CaseState[] = ['open', 'reportable'];

export const OBLIGATIONS = ['early_warning', 'notification', 'final_report', 'intermediate'] as const;
export type Obligation = (typeof OBLIGATIONS)[number];

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;

export interface DeadlineFacts {
  kind: CaseKind;
  state: CaseState;
  awareAt: Date;
  /** When the corrective or mitigating measure became available (vulnerabilities). */
  correctiveAt: Date | null;
  /** Earliest filing to the CSIRT or ENISA per stage. */
  firstFiled: Partial<Record<'early_warning' | 'notification' | 'final_report', Date>>;
  intermediateRequests: readonly { id: string; dueAt: Date; metAt: Date | null }[];
}

export type DeadlineStatus = 'pending' | 'overdue' | 'met' | 'met_late' | 'waiting' | 'not_applicable';

export interface Deadline {
  obligation: Obligation;
  /** The intermediate request it answers; null for the other obligations. */
  request_id: string | null;
  article: string;
  /** Null while the moment it runs from is not recorded yet (see `waiting_for`). */
  due_at: Date | null;
  /** What the clock runs from, in words. */
  basis: string;
  waiting_for: 'corrective_measure' | 'notification' | null;
  met_at: Date | null;
  status: DeadlineStatus;
  /** Milliseconds until due (negative once overdue); null when met, waiting or not applicable. */
  remaining_ms: number | null;
  overdue: boolean;
}

/** One calendar month later in UTC; the 31st of a shorter month becomes its last day. */
export function addOneMonthUtc(d: Date): Date {
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() + 1;
  const lastDay = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  const day = Math.min(d.getUTCDate(), lastDay);
  return new Date(Date.UTC(y, m, day, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds()));
}

function deadline(
  facts: DeadlineFacts,
  now: Date,
  base: Pick<Deadline, 'obligation' | 'request_id' | 'article' | 'basis'> & { due: Date | null; waitingFor?: Deadline['waiting_for']; metAt: Date | null },
): Deadline {
  const active = ACTIVE_STATES.includes(facts.state);
  let status: DeadlineStatus;
  if (base.metAt !== null) status = base.due !== null && base.metAt.getTime() > base.due.getTime() ? 'met_late' : 'met';
  else if (!active) status = 'not_applicable';
  else if (base.due === null) status = 'waiting';
  // Overdue strictly after the due instant: at exactly awareness + 24 h the early warning is still on time.
  else status = now.getTime() > base.due.getTime() ? 'overdue' : 'pending';
  const open = status === 'pending' || status === 'overdue';
  return {
    obligation: base.obligation,
    request_id: base.request_id,
    article: base.article,
    due_at: base.due,
    basis: base.basis,
    waiting_for: base.due === null && base.metAt === null ? (base.waitingFor ?? null) : null,
    met_at: base.metAt,
    status,
    remaining_ms: open ? base.due!.getTime() - now.getTime() : null,
    overdue: status === 'overdue',
  };
}

/** Every deadline of a case at `now`, in obligation order (intermediate requests last, by due time). */
export function caseDeadlines(facts: DeadlineFacts, now: Date): Deadline[] {
  const vulnerability = facts.kind === 'exploited_vulnerability';
  const aware = facts.awareAt.getTime();
  const notifiedAt = facts.firstFiled.notification ?? null;
  const out: Deadline[] = [
    deadline(facts, now, {
      obligation: 'early_warning',
      request_id: null,
      article: vulnerability ? 'Art. 14(2)(a)' : 'Art. 14(4)(a)',
      basis: 'awareness + 24 hours',
      due: new Date(aware + DAY_MS),
      metAt: facts.firstFiled.early_warning ?? null,
    }),
    deadline(facts, now, {
      obligation: 'notification',
      request_id: null,
      article: vulnerability ? 'Art. 14(2)(b)' : 'Art. 14(4)(b)',
      basis: 'awareness + 72 hours',
      due: new Date(aware + 3 * DAY_MS),
      metAt: notifiedAt,
    }),
    vulnerability
      ? deadline(facts, now, {
          obligation: 'final_report',
          request_id: null,
          article: 'Art. 14(2)(c)',
          basis: 'corrective or mitigating measure available + 14 days',
          due: facts.correctiveAt === null ? null : new Date(facts.correctiveAt.getTime() + 14 * DAY_MS),
          waitingFor: 'corrective_measure',
          metAt: facts.firstFiled.final_report ?? null,
        })
      : deadline(facts, now, {
          obligation: 'final_report',
          request_id: null,
          article: 'Art. 14(4)(c)',
          basis: 'incident notification submitted + 1 month',
          due: notifiedAt === null ? null : addOneMonthUtc(notifiedAt),
          waitingFor: 'notification',
          metAt: facts.firstFiled.final_report ?? null,
        }),
  ];
  const requests = [...facts.intermediateRequests].sort((a, b) => a.dueAt.getTime() - b.dueAt.getTime());
  for (const r of requests) {
    out.push(
      deadline(facts, now, {
        obligation: 'intermediate',
        request_id: r.id,
        article: 'Art. 14 (intermediate report on request)',
        basis: 'due time set by the request',
        due: r.dueAt,
        metAt: r.metAt,
      }),
    );
  }
  return out;
}

/** The nearest deadline still to meet (overdue ones first: they are the earliest), or null. */
export function nextDue(deadlines: readonly Deadline[]): Deadline | null {
  let best: Deadline | null = null;
  for (const d of deadlines) {
    if ((d.status === 'pending' || d.status === 'overdue') && d.due_at !== null && (best === null || d.due_at < best.due_at!)) best = d;
  }
  return best;
}
