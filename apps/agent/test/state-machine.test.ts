import { describe, expect, it } from 'vitest';
import {
  ACTIVATION_PHASE,
  AgentError,
  EVENTS,
  RECOVERY,
  RESUME_ACTIONS,
  STATES,
  TRANSITIONS,
  classifyFailure,
  countsAsResumption,
  decideFailure,
  nextState,
} from '../src/index.js';
import { STEPS } from '../src/transaction/steps.js';

describe('state machine tables', () => {
  it('persisted state names never change (append only)', () => {
    // A new agent must read journals written by older ones: this list only grows at the end.
    expect(STATES.slice(0, 15)).toEqual([
      'desired-persisted',
      'downloading',
      'downloaded',
      'staged',
      'activating',
      'group-activated',
      'group-healthy',
      'awaiting-reboot',
      'committing',
      'committed',
      'rolling-back',
      'rolled-back',
      'failed',
      'receipt-persisted',
      'reported',
    ]);
  });

  it('every state has a transition row, a recovery action and a step handler', () => {
    for (const s of STATES) {
      expect(TRANSITIONS[s]).toBeDefined();
      expect(RESUME_ACTIONS[RECOVERY[s]]).toBeDefined();
      expect(typeof STEPS[s]).toBe('function');
      for (const [event, next] of Object.entries(TRANSITIONS[s])) {
        expect(EVENTS).toContain(event);
        expect(STATES).toContain(next);
      }
    }
    expect(Object.keys(STEPS).sort()).toEqual([...STATES].sort());
  });

  it('the activation phase is read from the table: exactly the states a failure rolls back from', () => {
    expect([...ACTIVATION_PHASE].sort()).toEqual(['activating', 'awaiting-reboot', 'committing', 'group-activated', 'group-healthy']);
    for (const s of ACTIVATION_PHASE) expect(nextState(s, 'failure')).toBe('rolling-back');
    const into = STATES.filter((s) => Object.values(TRANSITIONS[s]).includes('activating'));
    expect(into.sort()).toEqual(['group-healthy', 'staged']);
  });

  it('an illegal transition has its own code, never JOURNAL_CORRUPT', () => {
    let err: unknown;
    try {
      nextState('downloading', 'failure');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AgentError);
    expect(err).toMatchObject({ code: 'TRANSITION_ILLEGAL', field: 'state', message: 'no transition from state downloading on event failure' });
  });

  it('recovery rolls back any interrupted activation before a retry', () => {
    expect(RECOVERY.activating).toBe('rollback-then-retry');
    expect(RECOVERY['group-activated']).toBe('rollback-then-retry');
    expect(RECOVERY['group-healthy']).toBe('rollback-then-retry');
    expect(RECOVERY['rolling-back']).toBe('finish-rollback');
    expect(RECOVERY.downloading).toBe('download');
    expect(nextState('rolling-back', 'retry')).toBe('staged');
  });

  it('the loop guard counts every resumption that does work, not writing or uploading a receipt', () => {
    expect(STATES.filter((s) => !countsAsResumption(s))).toEqual(['committed', 'rolled-back', 'failed', 'receipt-persisted', 'reported']);
  });

  it('classifies failures once: transient retries later, fatal fails, activation-phase rolls back', () => {
    expect(classifyFailure(new AgentError('FETCH_FAILED', 'x'))).toBe('transient');
    expect(classifyFailure(new AgentError('DIGEST_MISMATCH', 'x'))).toBe('fatal');
    expect(classifyFailure(new AgentError('TRANSITION_ILLEGAL', 'x'))).toBe('fatal');
    expect(classifyFailure(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe('transient');
    expect(classifyFailure(new TypeError('bug'))).toBe('fatal');
    expect(decideFailure('downloading', new AgentError('FETCH_FAILED', 'x'))).toBe('retry-later');
    expect(decideFailure('downloading', new AgentError('DIGEST_MISMATCH', 'x'))).toBe('fail');
    expect(decideFailure('group-activated', new AgentError('FETCH_FAILED', 'x'))).toBe('rollback');
    expect(decideFailure('activating', new AgentError('ACTIVATION_FAILED', 'x'))).toBe('rollback');
    expect(decideFailure('committed', new AgentError('RECEIPT_FAILED', 'x'))).toBe('retry-later');
    expect(decideFailure('rolling-back', new AgentError('ROLLBACK_FAILED', 'x'))).toBe('fail');
  });
});
