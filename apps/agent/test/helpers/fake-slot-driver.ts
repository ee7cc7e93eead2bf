import { readFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { AgentError } from '../../src/errors.js';
import type { BundleInfo, SlotDriver, SlotStatus } from '../../src/drivers/slot.js';

/**
 * An in-memory A/B system that behaves like RAUC with a custom bootloader backend, for fast
 * state-machine tests. A "bundle" is a JSON file `{"compatible","version","signed":true}`.
 * `reboot()` only records the request; the test calls `boot()` to simulate the restart.
 */
export class FakeSlotDriver implements SlotDriver {
  compatible: string;
  booted = 'A';
  primary = 'A';
  state: Record<string, 'good' | 'bad'> = { A: 'good', B: 'good' };
  rebootRequests = 0;
  readonly calls: string[] = [];

  constructor(compatible = 'svc-test') {
    this.compatible = compatible;
  }

  async status(): Promise<SlotStatus> {
    this.calls.push('status');
    return { compatible: this.compatible, booted: this.booted, primary: this.primary };
  }

  async inspect(bundle: string): Promise<BundleInfo> {
    this.calls.push('inspect');
    const bytes = await readFile(bundle);
    const doc = JSON.parse(bytes.toString('utf8')) as { compatible: string; version: string; signed?: boolean };
    if (doc.signed !== true) throw new AgentError('STAGE_FAILED', 'signature verification failed', { field: 'os-bundle' });
    return { compatible: doc.compatible, version: doc.version, manifestHash: createHash('sha256').update(bytes).digest('hex') };
  }

  async install(bundle: string): Promise<void> {
    this.calls.push('install');
    const info = await this.inspect(bundle);
    if (info.compatible !== this.compatible) {
      throw new AgentError('ACTIVATION_FAILED', `Compatible mismatch: Expected '${this.compatible}' but bundle manifest has '${info.compatible}'`, {
        field: 'rauc install',
      });
    }
    const other = this.other(this.booted);
    this.state[other] = 'good';
    this.primary = other;
  }

  async markGood(): Promise<void> {
    this.calls.push('mark-good');
    this.state[this.booted] = 'good';
  }

  async markBad(which: 'booted' | 'other'): Promise<void> {
    this.calls.push(`mark-bad ${which}`);
    const bad = which === 'booted' ? this.booted : this.other(this.booted);
    this.state[bad] = 'bad';
    this.primary = this.other(bad);
  }

  async reboot(): Promise<void> {
    this.calls.push('reboot');
    this.rebootRequests += 1;
  }

  /** Simulates the bootloader: boots the primary unless it is bad, then falls back. */
  boot(): void {
    this.booted = this.state[this.primary] === 'bad' ? this.other(this.primary) : this.primary;
  }

  private other(slot: string): string {
    return slot === 'A' ? 'B' : 'A';
  }
}
