/** Events that move a transaction between states; also persisted, never renamed. */
export const EVENTS = [
  'verified',
  'download-started',
  'downloaded',
  'staged',
  'activate-group',
  'group-activated',
  'group-healthy',
  'next-group',
  'reboot-required',
  'rebooted',
  'all-healthy',
  'committed',
  'failure', // activation-phase failure: roll back
  'fatal', // failure before anything was activated, or rollback impossible
  'rolled-back',
  'retry', // conservative rollback after a crash finished; activate again
  'receipt-persisted',
  'uploaded',
] as const;

export type Event = (typeof EVENTS)[number];
