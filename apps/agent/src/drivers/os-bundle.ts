import { readFile } from 'node:fs/promises';
import { AgentError } from '../errors.js';
import { writeFileAtomic } from '../journal/io.js';
import { isDigest, type Digest } from '@svc/release-core';
import type { ActivationResult, DriverFacts, MemberDriver, MemberSpec } from './driver.js';
import type { SlotDriver } from './slot.js';

/**
 * os-bundle members through an A/B slot driver. The bundle is standalone (spec §2.1 rule 3), so
 * this driver's facts become the receipt's `os` object (spec §2.3 rule 4, contracts §3):
 * compatible, bundle_version, manifest_hash, previous_slot, installed_slot, booted_slot,
 * bootloader_primary, mark, phase.
 */
export class OsBundleDriver implements MemberDriver {
  readonly kind = 'os-bundle' as const;
  private readonly slots: SlotDriver;
  private readonly stateFile: string | undefined;
  private staged = new Map<string, string>();

  /** `stateFile` remembers the digest of the last committed bundle (the running OS). */
  constructor(slots: SlotDriver, opts: { stateFile?: string } = {}) {
    this.slots = slots;
    this.stateFile = opts.stateFile;
  }

  // The live OS cannot be hashed as a file: its digest is the last bundle this agent committed.
  async currentDigest(): Promise<Digest | null> {
    if (this.stateFile === undefined) return null;
    try {
      const d = (await readFile(this.stateFile, 'utf8')).trim();
      return isDigest(d) ? d : null;
    } catch {
      return null;
    }
  }

  async stage(member: MemberSpec, stagedFile: string): Promise<DriverFacts> {
    const [info, status] = [await this.slots.inspect(stagedFile), await this.slots.status()];
    // spec §2.1 rule 3: the A/B tool checks compatible again at install; refusing here keeps a
    // mismatched bundle from ever reaching activation.
    if (info.compatible !== status.compatible) {
      throw new AgentError('STAGE_FAILED', `bundle compatible ${info.compatible} is not the system's ${status.compatible}`, {
        field: `components.${member.component}`,
      });
    }
    this.staged.set(member.component, stagedFile);
    return { compatible: info.compatible, bundle_version: info.version, manifest_hash: info.manifestHash, bundle_path: stagedFile, phase: 'staged' };
  }

  async activate(member: MemberSpec, facts: DriverFacts = {}): Promise<ActivationResult> {
    const bundle = this.staged.get(member.component) ?? (typeof facts.bundle_path === 'string' ? facts.bundle_path : undefined);
    if (bundle === undefined) throw new AgentError('ACTIVATION_FAILED', `${member.component} is not staged`, { field: member.component });
    const before = await this.slots.status();
    await this.slots.install(bundle);
    const after = await this.slots.status();
    if (after.primary === before.booted) {
      throw new AgentError('SLOT_MISMATCH', `install left the booted slot ${before.booted} primary`, { field: 'installed_slot' });
    }
    return {
      needsReboot: true,
      facts: {
        previous_slot: before.booted,
        installed_slot: after.primary,
        bootloader_primary: after.primary,
        booted_slot: before.booted,
        mark: 'none',
        phase: 'installed',
      },
    };
  }

  async confirmReboot(_member: MemberSpec, facts: DriverFacts): Promise<{ ok: boolean; facts: DriverFacts }> {
    const s = await this.slots.status();
    const ok = s.booted === facts.installed_slot;
    return { ok, facts: { booted_slot: s.booted, bootloader_primary: s.primary, phase: ok ? 'booted' : 'fell-back' } };
  }

  async rollback(_member: MemberSpec, facts: DriverFacts): Promise<DriverFacts> {
    const s = await this.slots.status();
    if (s.booted === facts.installed_slot) {
      // Running the new slot and it failed: mark it bad, fall back to the previous slot.
      await this.slots.markBad('booted');
      const after = await this.slots.status();
      return { booted_slot: after.booted, bootloader_primary: after.primary, mark: 'bad', phase: 'rolled-back', reboot: true };
    }
    if (s.primary === facts.installed_slot) {
      // Installed but never booted (or the bootloader fell back): point the bootloader home.
      await this.slots.markBad('other');
      const after = await this.slots.status();
      return { booted_slot: after.booted, bootloader_primary: after.primary, mark: 'bad', phase: 'rolled-back' };
    }
    return { booted_slot: s.booted, bootloader_primary: s.primary, phase: 'rolled-back' };
  }

  async commit(member: MemberSpec): Promise<DriverFacts> {
    await this.slots.markGood();
    if (this.stateFile !== undefined) await writeFileAtomic(this.stateFile, new TextEncoder().encode(member.digest));
    const s = await this.slots.status();
    return { booted_slot: s.booted, bootloader_primary: s.primary, mark: 'good', phase: 'committed' };
  }

  reboot(): Promise<void> {
    return this.slots.reboot();
  }
}
