/**
 * Persisted transaction states. These strings are written to the crash journal and read
 * back by newer agents: never rename or reuse one. Add new names at the end.
 */
export const STATES = [
  'desired-persisted', // spec §3 rule 5: verified desired state on disk, nothing fetched yet
  'downloading',
  'downloaded',
  'staged', // every member downloaded and staged; nothing activated (spec §3 rule 4)
  'activating', // a group is being activated (data.group)
  'group-activated', // every member of data.group activated, health not yet checked
  'group-healthy', // data.group passed its health policy
  'awaiting-reboot', // os-bundle installed into the other slot, reboot requested
  'committing',
  'committed',
  'rolling-back',
  'rolled-back',
  'failed',
  'receipt-persisted', // signed receipt bytes are in the outbox (spec §2.3 rule 1)
  'reported', // the channel uploaded the receipt
] as const;

export type State = (typeof STATES)[number];

export const TERMINAL_OUTCOMES: readonly State[] = ['committed', 'rolled-back', 'failed'];

export function isState(s: unknown): s is State {
  return typeof s === 'string' && (STATES as readonly string[]).includes(s);
}
