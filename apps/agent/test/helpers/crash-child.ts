/**
 * Child process of the crash tests: runs the real orchestrator with file-placement drivers
 * and a file-backed fetcher, and SIGKILLs itself at the step named by the scenario (once,
 * remembered by a marker file, unless `killEveryTime`). Each run resumes what the journal
 * holds and then applies the assignment again, like an agent restarting; it prints the
 * outcomes as one JSON line.
 */
import { appendFile, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parsePrivateKeyPem, parsePublicKeyPem } from '@svc/release-core';
import { FilePlacementDriver } from '../../src/drivers/file-placement.js';
import { Journal } from '../../src/journal/journal.js';
import { Orchestrator } from '../../src/transaction/orchestrator.js';
import type { TargetFetcher } from '../../src/staging/fetcher.js';
import type { SignedAssignment } from '../../src/transaction/assignment.js';

export interface CrashScenario {
  dataDir: string;
  killAt: string;
  killEveryTime?: boolean;
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

async function die(step: string): Promise<void> {
  if (step !== scenario.killAt) return;
  const marker = join(scenario.dataDir, `killed-${step}`);
  const seen = await stat(marker).then(() => true, () => false);
  if (seen && !scenario.killEveryTime) return;
  await writeFile(marker, 'x');
  process.kill(process.pid, 'SIGKILL');
  await new Promise(() => undefined); // never continue past the kill
}

const fetcher: TargetFetcher = {
  async fetchTarget(path, _expected, destFile, resumeFrom) {
    const bytes = await readFile(join(scenario.targetsDir, encodeURIComponent(path)));
    await appendFile(join(scenario.dataDir, 'fetch.log'), `${path} ${resumeFrom}\n`);
    const half = Math.floor(bytes.length / 2);
    if (resumeFrom < half) {
      await appendFile(destFile, bytes.subarray(resumeFrom, half));
      await die('mid-download');
      resumeFrom = half;
    }
    await appendFile(destFile, bytes.subarray(resumeFrom));
  },
};

const journal = await Journal.open(join(scenario.dataDir, 'journal'));
const orchestrator = new Orchestrator({
  dataDir: scenario.dataDir,
  journal,
  release: { settings: { ...scenario.settings, trustDir: '/nonexistent' }, trustedKeys: [parsePublicKeyPem(scenario.trustedKeyPem)] },
  fetcher,
  drivers: {
    model: new FilePlacementDriver({ kind: 'model', dataDir: scenario.dataDir }),
    config: new FilePlacementDriver({ kind: 'config', dataDir: scenario.dataDir }),
  },
  device: { name: scenario.deviceName, key: parsePrivateKeyPem(scenario.deviceKeyPem), certificateDer: Buffer.from(scenario.certDerB64, 'base64') },
  health: { check: async () => ({ verdict: 'healthy', results: [{ name: 'ok', ok: true, detail: 'exit 0' }] }) },
  maxResumptions: scenario.maxResumptions,
  onStep: (step) => die(step),
});

const outcomes = [...(await orchestrator.resume())];
const { envelopeFile, ...rest } = scenario.assignment;
outcomes.push(await orchestrator.apply({ ...rest, envelope: await readFile(envelopeFile) }));
process.stdout.write(JSON.stringify(outcomes) + '\n');
