/**
 * Child process of the crash table: runs the real orchestrator (file-placement drivers, the
 * container driver over the fake runtime CLI with a config file member, or the os-bundle
 * driver over a slot fake whose state survives the process) with a file-backed
 * fetcher and the release's own health probes, and SIGKILLs itself when the crash point named
 * by the scenario is published (once, remembered by a marker file holding the journaled state
 * at the kill, unless `killEveryTime`). Each run resumes what the journal holds and then
 * applies the assignment again, like an agent restarting; it prints the outcomes as one line.
 */
import { subscribe } from 'node:diagnostics_channel';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parsePrivateKeyPem, parsePublicKeyPem } from '@svc/release-core';
import { ContainerDriver } from '../../src/drivers/container.js';
import type { DriverRegistry } from '../../src/drivers/driver.js';
import { FilePlacementDriver } from '../../src/drivers/file-placement.js';
import { OsBundleDriver } from '../../src/drivers/os-bundle.js';
import { Journal } from '../../src/journal/journal.js';
import { CRASH_POINT_CHANNEL, crashPoint, type CrashPointMessage } from '../../src/state-machine/crash-points.js';
import type { TargetFetcher } from '../../src/staging/fetcher.js';
import type { SignedAssignment } from '../../src/transaction/assignment.js';
import { Orchestrator } from '../../src/transaction/orchestrator.js';
import { FakeSlotDriver } from './fake-slot-driver.js';

export interface CrashScenario {
  dataDir: string;
  killAt: string;
  killEveryTime?: boolean;
  drivers: 'files' | 'os-bundle' | 'container';
  /** container: the directory of the fake runtime CLI (test/helpers/fake-runtime.ts), put first on PATH. */
  runtimeBin?: string;
  /** os-bundle: the restart after the kill boots the slot the bootloader points at. */
  bootOnRestart?: boolean;
  assignment: Omit<SignedAssignment, 'envelope'> & { envelopeFile: string };
  targetsDir: string;
  deviceKeyPem: string;
  deviceName: string;
  certDerB64: string;
  trustedKeyPem: string;
  settings: { tenant: string; product: string; profile: string };
  maxResumptions: number;
}

const scenario = JSON.parse(await readFile(process.argv[2]!, 'utf8')) as CrashScenario;
const marker = join(scenario.dataDir, `killed-${scenario.killAt}`);
const journal = await Journal.open(join(scenario.dataDir, 'journal'));

subscribe(CRASH_POINT_CHANNEL, (message) => {
  const { point, tx } = message as CrashPointMessage;
  if (point !== scenario.killAt || (existsSync(marker) && !scenario.killEveryTime)) return;
  // What the journal holds at this instant: the crash table checks it against CRASH_POINTS.
  const id = tx ?? journal.unfinished().at(-1)?.tx;
  writeFileSync(marker, id === undefined ? '' : (journal.get(id)?.state ?? ''));
  process.kill(process.pid, 'SIGKILL');
});

const fetcher: TargetFetcher = {
  async fetchTarget(path, _expected, destFile, resumeFrom, progress) {
    const bytes = await readFile(join(scenario.targetsDir, encodeURIComponent(path)));
    await appendFile(join(scenario.dataDir, 'fetch.log'), `${path} ${resumeFrom}\n`);
    const half = Math.floor(bytes.length / 2);
    if (resumeFrom < half) {
      await appendFile(destFile, bytes.subarray(resumeFrom, half));
      // as the channel's fetcher does: the durable prefix is journaled, a restart resumes there
      await progress?.checkpoint(half);
      crashPoint('mid-download');
      resumeFrom = half;
    }
    await appendFile(destFile, bytes.subarray(resumeFrom));
  },
};

/** The fake A/B system, its state in a file: the "device" outlives the agent process. */
class PersistedSlots extends FakeSlotDriver {
  private readonly file = join(scenario.dataDir, 'slots.json');

  constructor() {
    super('svc-test');
    if (existsSync(this.file)) Object.assign(this, JSON.parse(readFileSync(this.file, 'utf8')) as object);
  }

  save(): void {
    writeFileSync(this.file, JSON.stringify({ booted: this.booted, primary: this.primary, state: this.state, rebootRequests: this.rebootRequests }));
  }

  override async install(bundle: string): Promise<void> {
    await super.install(bundle);
    this.save();
  }

  override async markGood(): Promise<void> {
    await super.markGood();
    this.save();
  }

  override async markBad(which: 'booted' | 'other'): Promise<void> {
    await super.markBad(which);
    this.save();
  }

  override async reboot(): Promise<void> {
    await super.reboot();
    this.save();
  }
}

let drivers: DriverRegistry;
if (scenario.drivers === 'os-bundle') {
  const slots = new PersistedSlots();
  const booted = join(scenario.dataDir, 'booted-after-kill');
  if (scenario.bootOnRestart && existsSync(marker) && !existsSync(booted)) {
    slots.boot(); // the kill was the reboot
    slots.save();
    writeFileSync(booted, slots.booted);
  }
  drivers = { 'os-bundle': new OsBundleDriver(slots, { stateFile: join(scenario.dataDir, 'os-digest') }) };
} else if (scenario.drivers === 'container') {
  drivers = {
    container: new ContainerDriver({
      env: { ...process.env, PATH: `${scenario.runtimeBin}:${process.env.PATH}` },
      archiveDir: join(scenario.dataDir, 'kept', 'container'),
    }),
    config: new FilePlacementDriver({ kind: 'config', dataDir: scenario.dataDir }),
  };
} else {
  drivers = {
    model: new FilePlacementDriver({ kind: 'model', dataDir: scenario.dataDir }),
    config: new FilePlacementDriver({ kind: 'config', dataDir: scenario.dataDir }),
  };
}

const orchestrator = new Orchestrator({
  dataDir: scenario.dataDir,
  journal,
  release: { settings: { ...scenario.settings, trustDir: '/nonexistent' }, trustedKeys: [parsePublicKeyPem(scenario.trustedKeyPem)] },
  fetcher,
  drivers,
  device: { name: scenario.deviceName, key: parsePrivateKeyPem(scenario.deviceKeyPem), certificateDer: Buffer.from(scenario.certDerB64, 'base64') },
  maxResumptions: scenario.maxResumptions,
});

const outcomes = [...(await orchestrator.resume())];
const { envelopeFile, ...rest } = scenario.assignment;
outcomes.push(await orchestrator.apply({ ...rest, envelope: await readFile(envelopeFile) }));
process.stdout.write(JSON.stringify(outcomes) + '\n');
