import { isAgentError, type AgentErrorCode } from '../errors.js';
import { TERMINAL_OUTCOMES, type State } from './states.js';
import { ACTIVATION_PHASE } from './transitions.js';

export type FailureClass = 'fatal' | 'transient';
/** What the orchestrator does about a failure: the only place this is decided. */
export type FailureDecision = 'retry-later' | 'rollback' | 'fail';

// Conditions that can clear by themselves: the network, the disk filling up, a journal write
// hitting a flaky disk. Everything else is fatal for this transaction.
const TRANSIENT_CODES: ReadonlySet<AgentErrorCode> = new Set(['FETCH_FAILED', 'DISK_SPACE_LOW', 'JOURNAL_WRITE_FAILED']);
const TRANSIENT_ERRNO = new Set(['EIO', 'ENOSPC', 'EAGAIN', 'EBUSY', 'ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE']);

export function classifyFailure(err: unknown): FailureClass {
  if (isAgentError(err)) return TRANSIENT_CODES.has(err.code) ? 'transient' : 'fatal';
  const errno = (err as { code?: unknown } | null)?.code;
  if (typeof errno === 'string' && TRANSIENT_ERRNO.has(errno)) return 'transient';
  return 'fatal';
}

/** The outcome is decided and journaled from here on: only writing the report remains. */
const REPORTING_PHASE: ReadonlySet<State> = new Set([...TERMINAL_OUTCOMES, 'receipt-persisted', 'reported']);

/**
 * spec §3 rule 4: on activation or health failure restore every attempted member, whatever
 * the class. Before activation a transient failure is retried later and a fatal one fails
 * the transaction with nothing touched.
 */
export function decideFailure(state: State, err: unknown): FailureDecision {
  if (ACTIVATION_PHASE.has(state)) return 'rollback';
  if (REPORTING_PHASE.has(state)) return 'retry-later';
  return classifyFailure(err) === 'transient' ? 'retry-later' : 'fail';
}
