import type { Event } from './events.js';
import { STATES, type State } from './states.js';
import { AgentError } from '../errors.js';

/**
 * The transaction state machine as data: (state, event) -> next state. Anything not in
 * this table is a bug, refused loudly rather than guessed (Mender's transition table).
 */
export const TRANSITIONS: Readonly<Record<State, Partial<Record<Event, State>>>> = {
  'desired-persisted': { 'download-started': 'downloading', fatal: 'failed' },
  downloading: { downloaded: 'downloaded', fatal: 'failed' },
  downloaded: { staged: 'staged', fatal: 'failed' },
  // spec §3 rule 4: activation starts only from a fully staged member set
  staged: { 'activate-group': 'activating', fatal: 'failed' },
  activating: { 'group-activated': 'group-activated', 'reboot-required': 'awaiting-reboot', failure: 'rolling-back' },
  'group-activated': { 'group-healthy': 'group-healthy', failure: 'rolling-back' },
  'group-healthy': { 'next-group': 'activating', 'all-healthy': 'committing', failure: 'rolling-back' },
  'awaiting-reboot': { rebooted: 'group-activated', failure: 'rolling-back' },
  committing: { committed: 'committed', failure: 'rolling-back' },
  'rolling-back': { 'rolled-back': 'rolled-back', retry: 'staged', fatal: 'failed' },
  committed: { 'receipt-persisted': 'receipt-persisted' },
  'rolled-back': { 'receipt-persisted': 'receipt-persisted' },
  failed: { 'receipt-persisted': 'receipt-persisted' },
  'receipt-persisted': { uploaded: 'reported' },
  reported: {},
};

/**
 * spec §3 rule 4: the activation phase, read from the table itself: the states in which a
 * failure rolls back (members may be live with the candidate). Nothing else lists them.
 */
export const ACTIVATION_PHASE: ReadonlySet<State> = new Set(STATES.filter((s) => TRANSITIONS[s].failure !== undefined));

export function nextState(state: State, event: Event): State {
  const next = TRANSITIONS[state][event];
  if (next === undefined) {
    throw new AgentError('TRANSITION_ILLEGAL', `no transition from state ${state} on event ${event}`, { field: 'state' });
  }
  return next;
}
