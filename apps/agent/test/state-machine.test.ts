import { describe, expect, it } from 'vitest';
import { AgentError, EVENTS, RECOVERY, STATES, TRANSITIONS, classifyFailure, decideFailure, nextState } from '../src/index.js';

describe('state machine tables', () => {
  it('persisted state names never change (append only)', () => {
    // A new agent must read journals written by older ones: this list only grows at the end.
    expect(STATES.slice(0, 15)).toEqual([
      'desired-persisted', 'downloading', 'downloaded', 'staged', 'activating', 'group-activated', 'group-healthy',
      'awaiting-reboot', 'committing', 'committed', 'rolling-back', 'rolled-back', 'failed', 'receipt-persisted', 'reported',
    ]);
  });

  it('every state has a transition row and a recovery action', () => {
    for (const s of STATES) {
      expect(TRANSITIONS[s]).toBeDefined();
      expect(RECOVERY[s]).toBeDefined();
      for (const [event, next] of Object.entries(TRANSITIONS[s])) {
        expect(EVENTS).toContain(event);
        expect(STATES).toContain(next);
      }
    }
  });

  it('activation only starts from a fully staged set and failures during it roll back', () => {
    const into = STATES.filter((s) => Object.values(TRANSITIONS[s]).includes('activating'));
    expect(into.sort()).toEqual(['group-healthy', 'staged']);
    for (const s of ['activating', 'group-activated', 'group-healthy', 'awaiting-reboot', 'committing'] as const) {
      expect(nextState(s, 'failure')).toBe('rolling-back');
    }
    expect(() => nextState('downloading', 'failure')).toThrow(AgentError);
  });

  it('recovery rolls back any interrupted activation before a retry', () => {
    expect(RECOVERY.activating).toBe('rollback-then-retry');
    expect(RECOVERY['group-activated']).toBe('rollback-then-retry');
    expect(RECOVERY['group-healthy']).toBe('rollback-then-retry');
    expect(RECOVERY['rolling-back']).toBe('finish-rollback');
    expect(RECOVERY.downloading).toBe('download');
    expect(nextState('rolling-back', 'retry')).toBe('staged');
  });

  it('classifies failures once: transient retries later, fatal fails, activation-phase rolls back', () => {
    expect(classifyFailure(new AgentError('FETCH_FAILED', 'x'))).toBe('transient');
    expect(classifyFailure(new AgentError('DIGEST_MISMATCH', 'x'))).toBe('fatal');
    expect(classifyFailure(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe('transient');
    expect(classifyFailure(new TypeError('bug'))).toBe('fatal');
    expect(decideFailure('downloading', new AgentError('FETCH_FAILED', 'x'))).toBe('retry-later');
    expect(decideFailure('downloading', new AgentError('DIGEST_MISMATCH', 'x'))).toBe('fail');
    expect(decideFailure('group-activated', new AgentError('FETCH_FAILED', 'x'))).toBe('rollback');
    expect(decideFailure('activating', new AgentError('ACTIVATION_FAILED', 'x'))).toBe('rollback');
    expect(decideFailure('committed', new AgentError('RECEIPT_FAILED', 'x'))).toBe('retry-later');
  });
});
