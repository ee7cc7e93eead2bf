/**
 * Every failure the agent core can name, with a stable code. The state machine never
 * inspects messages: `classifyFailure` (state-machine/failure.ts) maps a code to fatal or
 * transient, and that alone decides report, retry or roll back.
 * Codes are never renamed: logs, receipts and tests match on them.
 */
import { CodedError, codedErrorGuard } from '@svc/release-core';
export const AGENT_ERROR_CODES = [
  // configuration
  'CONFIG_INVALID',
  'RELEASE_SETTINGS_PARTIAL',
  'RELEASE_SETTINGS_ABSENT',
  'TRUST_DIR_INVALID',
  // assignment and release
  'ASSIGNMENT_INVALID',
  'RELEASE_REFUSED',
  'MEMBER_SET_MISMATCH',
  'MEMBER_KIND_UNSUPPORTED',
  // download and staging
  'FETCH_FAILED',
  'DOWNLOAD_RETRIES_EXHAUSTED', // a download made no progress in SVC_AGENT_DOWNLOAD_ATTEMPTS attempts in a row
  'DIGEST_MISMATCH',
  'DISK_SPACE_LOW',
  'STAGE_FAILED',
  // activation and health
  'ACTIVATION_FAILED',
  'HEALTH_POLICY_INVALID',
  'HEALTH_FAILED',
  'ROLLBACK_FAILED',
  'COMMIT_FAILED',
  'SLOT_MISMATCH',
  // journal and receipts
  'JOURNAL_WRITE_FAILED',
  'JOURNAL_CORRUPT',
  'LOOP_GUARD',
  'RECEIPT_FAILED',
  // state machine
  'TRANSITION_ILLEGAL', // an event the transition table has no row for: a bug, never guessed
  'JOURNAL_VERSION_UNSUPPORTED', // a journal record of a version this agent cannot read
] as const;

export type AgentErrorCode = (typeof AGENT_ERROR_CODES)[number];

export class AgentError<C extends AgentErrorCode = AgentErrorCode> extends CodedError<C> {
  override readonly name = 'AgentError';
  /** The field, member or probe the failure is about, when there is one. */
  readonly field: string | undefined;

  constructor(code: C, message: string, options: { cause?: unknown; field?: string } = {}) {
    super(code, message, options);
    this.field = options.field;
  }
}

export const isAgentError = codedErrorGuard<AgentError>(AgentError);
