import { useEffect, useState } from 'react';
import type { paths } from '../../api/client';
import { Badge } from '../../ui/kit';

type FindingsQuery = NonNullable<paths['/api/v1/findings']['get']['parameters']['query']>;
export type Severity = NonNullable<FindingsQuery['severity']>;
export type VexStatus = NonNullable<FindingsQuery['vex_status']>;
// Records over the generated unions: the compiler fails when the API gains a value.
const SEVERITY_SET: Record<Severity, true> = { critical: true, high: true, medium: true, low: true, none: true, unknown: true };
const VEX_SET: Record<VexStatus, true> = { not_affected: true, affected: true, fixed: true, under_investigation: true, none: true };
export const SEVERITIES = Object.keys(SEVERITY_SET) as Severity[];
export const VEX_STATUSES = Object.keys(VEX_SET) as VexStatus[];
export const isSeverity = (v: string): v is Severity => v in SEVERITY_SET;
export const isVexStatus = (v: string): v is VexStatus => v in VEX_SET;

/** A duration in words, to the minute: "2 d 3 h", "5 h 12 min", "40 min". */
export function duration(seconds: number): string {
  const s = Math.abs(Math.round(seconds));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return `${h} h ${m} min`;
  return `${m} min`;
}

/** Re-renders every `ms` so clocks move between fetches. */
function useNow(ms: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

/**
 * A deadline clock: the time remaining as the server computed it when the page was fetched
 * (`remaining_seconds` at `fetchedAt`), counted down locally, and the server's overdue flag
 * (or the local count reaching zero). The due instant is shown in full beside it.
 */
export function DeadlineClock({
  dueAt,
  remainingSeconds,
  overdue,
  fetchedAt,
  met,
}: {
  dueAt: string | null;
  remainingSeconds: number | null;
  overdue: boolean;
  fetchedAt: number;
  met?: boolean;
}) {
  const now = useNow(30_000);
  if (dueAt === null || remainingSeconds === null) return <span className="muted">no clock</span>;
  const left = remainingSeconds - Math.max(0, now - fetchedAt) / 1000;
  const late = overdue || left < 0;
  return (
    <span className="clock">
      {met ? (
        <Badge value="met" />
      ) : late ? (
        <>
          <Badge value="overdue" /> <span className="overdue">overdue by {duration(left)}</span>
        </>
      ) : (
        <span>{duration(left)} left</span>
      )}{' '}
      <span className="muted">
        (due <time dateTime={dueAt}>{new Date(dueAt).toLocaleString()}</time>)
      </span>
    </span>
  );
}
