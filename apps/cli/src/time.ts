import { CliError } from './errors.js';

// RFC 3339 section 5.6 date-time; `T`/`Z` case-insensitive as the RFC allows.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|([+-])(\d{2}):(\d{2}))$/;

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/**
 * Parses the `--at` flag. Strict on purpose: Date.parse accepts `2026-02-30` (as
 * 2 March) and many non-RFC forms, and a verification time must mean exactly what
 * the operator typed.
 */
export function parseTimestamp(value: string, flag = '--at'): Date {
  const m = RFC3339.exec(value);
  const bad = (why: string) => new CliError('USAGE', `${flag} ${JSON.stringify(value)}: ${why}`);
  if (m === null) throw bad('not an RFC 3339 timestamp (e.g. 2026-05-01T12:00:00Z)');
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12) throw bad('month out of range');
  if (day < 1 || day > daysIn(year, month)) throw bad('day out of range');
  if (hour > 23) throw bad('hour out of range');
  if (minute > 59) throw bad('minute out of range');
  // A leap second (:60) cannot be represented by Date; refuse rather than shift it.
  if (second > 59) throw bad('second out of range (leap seconds are not supported)');
  if (m[8] !== undefined && m[8].toUpperCase() !== 'Z') {
    if (Number(m[10]) > 23 || Number(m[11]) > 59) throw bad('UTC offset out of range');
  }
  const ms = Date.parse(value.toUpperCase());
  if (Number.isNaN(ms)) throw bad('not a representable time');
  return new Date(ms);
}
