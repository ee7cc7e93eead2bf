/**
 * Expiry periods and refresh margins of the four top-level roles
 * (documented in docs/signing-repository.md).
 *
 * A role is re-signed by `refreshIfDue` once less than its margin remains, so a
 * refresh job running at least hourly keeps every role valid with slack for a
 * missed run or two; devices that cannot reach the server for longer than the
 * timestamp period see "expired" and stop updating (freeze protection).
 */
export type TufRole = 'root' | 'targets' | 'snapshot' | 'timestamp';

export const TUF_ROLES: readonly TufRole[] = ['root', 'targets', 'snapshot', 'timestamp'];

const HOUR = 3600_000;
const DAY = 24 * HOUR;

export const EXPIRY_PERIOD_MS: Readonly<Record<TufRole, number>> = {
  root: 365 * DAY,
  targets: 90 * DAY,
  snapshot: 7 * DAY,
  timestamp: 1 * DAY,
};

/** Re-sign when less than this remains. Root is rotated by an operator, never by the job. */
export const REFRESH_MARGIN_MS: Readonly<Record<Exclude<TufRole, 'root'>, number>> = {
  targets: 30 * DAY,
  snapshot: 3 * DAY,
  timestamp: 12 * HOUR,
};

/** TUF wants `YYYY-MM-DDTHH:MM:SSZ` (no fractional seconds). */
export function tufExpires(now: Date, role: TufRole): string {
  const at = new Date(Math.floor((now.getTime() + EXPIRY_PERIOD_MS[role]) / 1000) * 1000);
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function isDue(expires: string, now: Date, role: Exclude<TufRole, 'root'>): boolean {
  return Date.parse(expires) - now.getTime() < REFRESH_MARGIN_MS[role];
}
