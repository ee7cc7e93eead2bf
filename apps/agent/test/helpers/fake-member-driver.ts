import type { ComponentKind, Digest } from '@svc/release-core';
import type { ActivationResult, DriverFacts, MemberDriver, MemberSpec } from '../../src/drivers/driver.js';
import { AgentError } from '../../src/errors.js';

/** A call the fake driver saw, in order: tests assert rollback order from this log. */
export interface DriverCall {
  op: 'stage' | 'activate' | 'rollback' | 'commit';
  component: string;
}

/**
 * Faithful in-memory driver for state-machine tests: tracks live and previous digests per
 * component exactly like the file driver does, and fails on demand.
 */
export class FakeMemberDriver implements MemberDriver {
  readonly kind: ComponentKind;
  readonly live = new Map<string, Digest | null>();
  readonly prev = new Map<string, Digest | null>();
  readonly staged = new Map<string, Digest>();
  readonly calls: DriverCall[];
  /** Components whose activation throws. */
  failActivate = new Set<string>();

  constructor(kind: ComponentKind, calls: DriverCall[] = []) {
    this.kind = kind;
    this.calls = calls;
  }

  async currentDigest(member: MemberSpec): Promise<Digest | null> {
    return this.live.get(member.component) ?? null;
  }

  async stage(member: MemberSpec): Promise<void> {
    this.calls.push({ op: 'stage', component: member.component });
    this.staged.set(member.component, member.digest);
  }

  async activate(member: MemberSpec): Promise<ActivationResult> {
    this.calls.push({ op: 'activate', component: member.component });
    if (!this.staged.has(member.component)) throw new AgentError('ACTIVATION_FAILED', `${member.component} not staged`);
    if (!this.prev.has(member.component)) this.prev.set(member.component, this.live.get(member.component) ?? null);
    if (this.failActivate.has(member.component)) throw new AgentError('ACTIVATION_FAILED', `${member.component} refused to start`, { field: member.component });
    this.live.set(member.component, member.digest);
    return { needsReboot: false };
  }

  async rollback(member: MemberSpec): Promise<void> {
    this.calls.push({ op: 'rollback', component: member.component });
    if (!this.prev.has(member.component)) return;
    this.live.set(member.component, this.prev.get(member.component) ?? null);
    this.prev.delete(member.component);
  }

  async commit(member: MemberSpec, _facts?: DriverFacts): Promise<void> {
    this.calls.push({ op: 'commit', component: member.component });
    this.prev.delete(member.component);
  }
}
