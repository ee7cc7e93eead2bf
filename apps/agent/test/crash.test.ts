import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseCertificatePem, verifyReceipt, type ReceiptPayload } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRASH_POINTS, type State } from '../src/index.js';
import { crashPointPattern } from '../src/state-machine/crash-points.js';
import { assignmentFor } from './helpers/agent-fixture.js';
import { compileChild } from './helpers/compile-child.js';
import type { CrashScenario } from './helpers/crash-child.js';
import { PRODUCT, PROFILE, TENANT, buildRelease, makeDevice, sha, type BuiltRelease, type DeviceFixture } from './helpers/release-fixture.js';
import { installFakeRuntime } from './helpers/fake-runtime.js';
import { tempDir } from './helpers/tools.js';

/**
 * Kill a real agent process at every crash point, restart it until it finishes, and check
 * the journal's EXACT chain of states, the receipt (verified) and what is live on disk
 * (Mender's `state_chain` rows). The release has two file members in two activation groups,
 * each group with its own health probe; interrupted activations are rolled back first.
 */
type Release = 'two-groups' | 'group-1-unhealthy' | 'tampered-conf-b' | 'os-bundle' | 'container' | 'container-group-1-unhealthy';

interface Row {
  name: string;
  /** The crash point as reached (`mid-activation-1`, not the `<group>` pattern). */
  killIn: string;
  killEveryTime?: boolean;
  release?: Release;
  /** os-bundle: the restart after the kill boots the new slot (the kill was the reboot). */
  bootOnRestart?: boolean;
  /** Every state change the journal recorded, in order, nothing left out; default: the two-groups chain of `killIn`. */
  expectStates?: State[];
  expectReceipt: { activation: ReceiptPayload['activation']; health: ReceiptPayload['health']; verdicts?: readonly string[]; os?: Record<string, unknown> };
  /** What is live afterwards. */
  expectLive: 'v1' | 'v2' | 'os-B' | 'os-A';
}

/** The exact state chains, shared with the end-to-end crash table (test/vectors/crash-chains.json). */
const CHAINS = JSON.parse(readFileSync(join(import.meta.dirname, 'vectors', 'crash-chains.json'), 'utf8')) as {
  'two-groups': Record<string, State[]>;
  'group-1-unhealthy': State[];
  'bytes-refused': State[];
  'loop-guard': State[];
  'os-bundle-new-slot-booted': State[];
  'os-bundle-old-slot-booted': State[];
};
/** The chain of the two-group release killed at `point`. */
const chain = (point: string): State[] => {
  const states = CHAINS['two-groups'][point];
  if (states === undefined) throw new Error(`crash-chains.json: no two-groups chain for ${point}`);
  return states;
};
const committed = { activation: 'activated', health: 'healthy', verdicts: ['committed', 'committed'] } as const;
/** Group 1 fails its own probe: both members restored, whatever was interrupted on the way. */
const GROUP_1_UNHEALTHY = {
  release: 'group-1-unhealthy',
  expectStates: CHAINS['group-1-unhealthy'],
  expectReceipt: { activation: 'rolled-back', health: 'unhealthy', verdicts: ['rolled-back', 'rolled-back'] },
  expectLive: 'v1',
} as const satisfies Partial<Row>;

const rows: Row[] = [
  {
    name: 'after the desired state is persisted',
    killIn: 'after-desired-state-persisted',
    expectReceipt: committed,
    expectLive: 'v2',
  },
  {
    name: 'between recording the live digests and starting the download',
    killIn: 'previous-digests-recorded',
    expectReceipt: committed,
    expectLive: 'v2',
  },
  {
    name: 'mid-download (resumes from the partial file)',
    killIn: 'mid-download',
    expectReceipt: committed,
    expectLive: 'v2',
  },
  { name: 'after download', killIn: 'after-download', expectReceipt: committed, expectLive: 'v2' },
  { name: 'after stage', killIn: 'after-stage', expectReceipt: committed, expectLive: 'v2' },
  {
    name: 'inside the file driver, between link and rename',
    killIn: 'mid-driver-write',
    expectReceipt: committed,
    expectLive: 'v2',
  },
  {
    name: 'mid-activation of group 0',
    killIn: 'mid-activation-0',
    expectReceipt: committed,
    expectLive: 'v2',
  },
  {
    name: 'before group 0 health',
    killIn: 'before-health-0',
    expectReceipt: committed,
    expectLive: 'v2',
  },
  { name: 'after group 0 health', killIn: 'after-health-0', expectReceipt: committed, expectLive: 'v2' },
  {
    name: 'mid-activation of group 1',
    killIn: 'mid-activation-1',
    expectReceipt: committed,
    expectLive: 'v2',
  },
  {
    name: 'before group 1 health',
    killIn: 'before-health-1',
    expectReceipt: committed,
    expectLive: 'v2',
  },
  {
    name: 'after group 1 health',
    killIn: 'after-health-1',
    expectReceipt: committed,
    expectLive: 'v2',
  },
  { name: 'mid-commit (finishes the commit)', killIn: 'mid-commit', expectReceipt: committed, expectLive: 'v2' },
  { name: 'before the receipt', killIn: 'before-receipt', expectReceipt: committed, expectLive: 'v2' },
  {
    name: 'after the receipt, before upload (same bytes kept)',
    killIn: 'after-receipt-before-upload',
    expectReceipt: committed,
    expectLive: 'v2',
  },
  { name: 'mid-rollback after group 1 failed its own probe (finishes the rollback)', killIn: 'mid-rollback', ...GROUP_1_UNHEALTHY },
  { name: 'before the receipt of a rolled-back transaction', killIn: 'before-receipt', ...GROUP_1_UNHEALTHY },
  {
    name: 'before the receipt of a failed transaction (bytes differ from the signed digest)',
    killIn: 'before-receipt',
    release: 'tampered-conf-b',
    expectStates: CHAINS['bytes-refused'],
    expectReceipt: { activation: 'failed', health: 'not-checked', verdicts: ['not-attempted', 'failed'] },
    expectLive: 'v1',
  },
  {
    name: 'killed in activation every time: the loop guard rolls back and fails it',
    killIn: 'mid-activation-0',
    killEveryTime: true,
    expectStates: CHAINS['loop-guard'],
    expectReceipt: { activation: 'rolled-back', health: 'not-checked', verdicts: ['rolled-back', 'not-attempted'] },
    expectLive: 'v1',
  },
  // group 0 is a container (its kept image archive swapped like a placed file), group 1 a config
  {
    name: 'container: between the kept archive link and its rename',
    killIn: 'mid-driver-write',
    release: 'container',
    expectReceipt: committed,
    expectLive: 'v2',
  },
  { name: 'container: mid-activation of group 0', killIn: 'mid-activation-0', release: 'container', expectReceipt: committed, expectLive: 'v2' },
  { name: 'container: mid-commit (finishes the commit)', killIn: 'mid-commit', release: 'container', expectReceipt: committed, expectLive: 'v2' },
  { name: 'container: mid-rollback after group 1 failed its own probe', killIn: 'mid-rollback', ...GROUP_1_UNHEALTHY, release: 'container-group-1-unhealthy' },
  {
    name: 'os-bundle: reboot requested, the restart boots the new slot (confirmed, health-checked, committed)',
    killIn: 'reboot-requested',
    release: 'os-bundle',
    bootOnRestart: true,
    expectStates: CHAINS['os-bundle-new-slot-booted'],
    expectReceipt: {
      activation: 'activated',
      health: 'healthy',
      os: { previous_slot: 'A', installed_slot: 'B', booted_slot: 'B', mark: 'good', phase: 'committed' },
    },
    expectLive: 'os-B',
  },
  {
    name: 'os-bundle: reboot requested, the old slot came back up (slot mismatch: rolled back)',
    killIn: 'reboot-requested',
    release: 'os-bundle',
    expectStates: CHAINS['os-bundle-old-slot-booted'],
    expectReceipt: {
      activation: 'rolled-back',
      health: 'not-checked',
      os: { previous_slot: 'A', installed_slot: 'B', booted_slot: 'A', bootloader_primary: 'A', mark: 'bad', phase: 'rolled-back' },
    },
    expectLive: 'os-A',
  },
];

const MODEL_V2 = 'model-a-v2'.repeat(1000);

function releaseFor(kind: Release, dataDir: string): { rel: BuiltRelease; tamper?: string } {
  if (kind === 'os-bundle') {
    return {
      rel: buildRelease({
        components: [{ name: 'os', kind: 'os-bundle', content: JSON.stringify({ compatible: 'svc-test', version: '5.0.0', signed: true }) }],
        probes: [{ name: 'up', type: 'command', command: ['true'], timeout_s: 5 }],
      }),
    };
  }
  const placed = (kind: string, name: string) => join(dataDir, 'placed', kind, name);
  if (kind === 'container' || kind === 'container-group-1-unhealthy') {
    return {
      rel: buildRelease({
        components: [
          { name: 'web', kind: 'container', content: 'web-v2' },
          { name: 'conf-b', kind: 'config', content: 'conf-b-v2' },
        ],
        groups: [['web'], ['conf-b']],
        probes: [
          { name: 'web-v2', type: 'command', command: ['grep', '-q', 'web-v2', join(dataDir, 'kept', 'container', 'web.tar')], timeout_s: 5, group: 0 },
          { name: 'conf-b-v2', type: 'command', command: ['grep', '-q', 'conf-b-v2', placed('config', 'conf-b')], timeout_s: 5, group: 1 },
          ...(kind === 'container-group-1-unhealthy' ? [{ name: 'broken', type: 'command', command: ['false'], timeout_s: 5, group: 1 }] : []),
        ],
      }),
    };
  }
  const rel = buildRelease({
    components: [
      { name: 'model-a', kind: 'model', content: MODEL_V2 },
      { name: 'conf-b', kind: 'config', content: 'conf-b-v2' },
    ],
    groups: [['model-a'], ['conf-b']],
    // each group checks its own member: run after group 0, conf-b's probe would see v1 and fail
    probes: [
      { name: 'model-a-v2', type: 'command', command: ['grep', '-q', 'model-a-v2', placed('model', 'model-a')], timeout_s: 5, group: 0 },
      { name: 'conf-b-v2', type: 'command', command: ['grep', '-q', 'conf-b-v2', placed('config', 'conf-b')], timeout_s: 5, group: 1 },
      ...(kind === 'group-1-unhealthy' ? [{ name: 'broken', type: 'command', command: ['false'], timeout_s: 5, group: 1 }] : []),
    ],
  });
  return { rel, ...(kind === 'tampered-conf-b' ? { tamper: 'conf-b' } : {}) };
}

let root: { dir: string; cleanup: () => Promise<void> };
let device: DeviceFixture;
let child: string;
beforeAll(async () => {
  root = await tempDir();
  device = await makeDevice(join(root.dir, 'pki'));
  child = await compileChild(join(root.dir, 'build'), 'crash-child.ts');
});
afterAll(() => root.cleanup());

describe('crash table rows', () => {
  it('kill every crash point of the sequence at least once', () => {
    const covered = new Set(rows.map((r) => crashPointPattern(r.killIn)));
    expect([...covered].sort()).toEqual(Object.keys(CRASH_POINTS).sort());
  });
});

describe.sequential('crash table: SIGKILL at every crash point, restart, converge', () => {
  let n = 0;
  it.each(rows)('$name', async (row) => {
    const dir = join(root.dir, `case-${++n}`);
    const dataDir = join(dir, 'data');
    const targetsDir = join(dir, 'targets');
    await mkdir(targetsDir, { recursive: true });
    const kind = row.release ?? 'two-groups';
    // v1 of both members is live before the transaction
    for (const [k, name] of [
      ['model', 'model-a'],
      ['config', 'conf-b'],
    ] as const) {
      await mkdir(join(dataDir, 'placed', k), { recursive: true });
      await writeFile(join(dataDir, 'placed', k, name), `${name}-v1`);
    }
    const container = kind === 'container' || kind === 'container-group-1-unhealthy';
    const runtimeBin = join(dir, 'bin');
    if (container) {
      // v1 of the container is live (the fake runtime's table) and its image archive kept
      await mkdir(runtimeBin);
      const fake = await installFakeRuntime(runtimeBin);
      await writeFile(
        fake.state,
        JSON.stringify({ containers: { 'svc-web': { id: 'id-svc-web', digest: sha('web-v1'), image: 'svc/web:v1', running: true } } }),
      );
      await mkdir(join(dataDir, 'kept', 'container'), { recursive: true });
      await writeFile(join(dataDir, 'kept', 'container', 'web.tar'), 'web-v1');
    }
    const { rel, tamper } = releaseFor(kind, dataDir);
    for (const [path, bytes] of rel.targets) {
      await writeFile(join(targetsDir, encodeURIComponent(path)), tamper !== undefined && path.startsWith(`${tamper}/`) ? Buffer.from(bytes).reverse() : bytes);
    }
    await writeFile(join(dir, 'envelope.json'), rel.envelope);
    const { envelope: _e, ...assignment } = assignmentFor(rel, 'tx-crash');
    const scenario: CrashScenario = {
      dataDir,
      killAt: row.killIn,
      ...(row.killEveryTime ? { killEveryTime: true } : {}),
      drivers: kind === 'os-bundle' ? 'os-bundle' : container ? 'container' : 'files',
      ...(container ? { runtimeBin } : {}),
      ...(row.bootOnRestart ? { bootOnRestart: true } : {}),
      assignment: { ...assignment, envelopeFile: join(dir, 'envelope.json') },
      targetsDir,
      deviceKeyPem: device.key.pem,
      deviceName: device.name,
      certDerB64: Buffer.from(device.certificateDer).toString('base64'),
      trustedKeyPem: rel.publicKey.pem,
      settings: { tenant: TENANT, product: PRODUCT, profile: PROFILE },
      maxResumptions: 2,
    };
    await writeFile(join(dir, 'scenario.json'), JSON.stringify(scenario));

    const run = () => spawnSync(process.execPath, [child, join(dir, 'scenario.json')], { encoding: 'utf8', timeout: 30_000 });
    const first = run();
    expect(first.signal, first.stderr).toBe('SIGKILL');
    // the kill happened where the table says: the journaled state is one CRASH_POINTS names
    const stateAtKill = (await readFile(join(dataDir, `killed-${row.killIn}`), 'utf8')) as State;
    expect(CRASH_POINTS[crashPointPattern(row.killIn)!].states).toContain(stateAtKill);
    const receiptFile = join(dataDir, 'outbox', 'tx-crash.receipt.json');
    const before = row.killIn === 'after-receipt-before-upload' ? await readFile(receiptFile) : null;
    let last = run();
    for (let i = 0; i < 5 && last.signal === 'SIGKILL'; i++) last = run();
    expect(last.status, last.stderr).toBe(0);
    const outcomes = JSON.parse(last.stdout.trim()) as { status: string; activation?: string }[];
    expect(outcomes.at(-1)).toMatchObject({ status: 'done', activation: row.expectReceipt.activation });

    const states = (await readFile(join(dataDir, 'journal', 'journal.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string; state?: string; event?: string })
      .filter((r) => r.kind === 'tx' && r.event !== 'snapshot' && r.event !== 'resumed')
      .map((r) => r.state);
    expect(states).toEqual(row.expectStates ?? chain(row.killIn));

    const bytes = await readFile(receiptFile);
    if (before) expect(bytes.equals(before)).toBe(true);
    const receipt = verifyReceipt(JSON.parse(bytes.toString('utf8')), {
      ca: parseCertificatePem(device.caPem),
      tenant: TENANT,
      device: device.name,
      now: new Date(),
    }).payload;
    expect(receipt).toMatchObject({ activation: row.expectReceipt.activation, health: row.expectReceipt.health });
    if (row.expectReceipt.verdicts) {
      expect(receipt.members!.map((m) => m.verdict)).toEqual(row.expectReceipt.verdicts);
      expect(receipt.members![0]!.previous_digest).toBe(sha(container ? 'web-v1' : 'model-a-v1'));
    }
    if (row.expectReceipt.os) expect(receipt.os).toMatchObject(row.expectReceipt.os);

    if (container) {
      // the live container and the one kept archive are the same version; nothing else is left
      const v = row.expectLive;
      const table = JSON.parse(await readFile(join(runtimeBin, 'state.json'), 'utf8')) as { containers: Record<string, { digest: string; running: boolean }> };
      expect(Object.keys(table.containers)).toEqual(['svc-web']);
      expect(table.containers['svc-web']).toMatchObject({ digest: sha(`web-${v}`), running: true });
      expect(await readFile(join(dataDir, 'kept', 'container', 'web.tar'), 'utf8')).toBe(`web-${v}`);
      expect(await readFile(join(dataDir, 'placed', 'config', 'conf-b'), 'utf8')).toBe(`conf-b-${v}`);
      // a rolled-back transaction leaves its staged archive for the next one to replace
      expect(await readdir(join(dataDir, 'kept', 'container'))).toEqual(v === 'v2' ? ['web.tar'] : ['web.tar', 'web.tar.svc-new']);
    } else if (row.expectLive === 'v1' || row.expectLive === 'v2') {
      const live = row.expectLive === 'v2' ? [MODEL_V2, 'conf-b-v2'] : ['model-a-v1', 'conf-b-v1'];
      expect(await readFile(join(dataDir, 'placed', 'model', 'model-a'), 'utf8')).toBe(live[0]);
      expect(await readFile(join(dataDir, 'placed', 'config', 'conf-b'), 'utf8')).toBe(live[1]);
      if (row.expectLive === 'v2') {
        // committed: nothing of the swap is left beside the live files
        expect((await readdir(join(dataDir, 'placed', 'model'))).concat(await readdir(join(dataDir, 'placed', 'config'))).sort()).toEqual([
          'conf-b',
          'model-a',
        ]);
      }
    } else {
      const slots = JSON.parse(await readFile(join(dataDir, 'slots.json'), 'utf8')) as { booted: string; primary: string };
      expect([slots.booted, slots.primary]).toEqual(row.expectLive === 'os-B' ? ['B', 'B'] : ['A', 'A']);
    }
    if (row.killIn === 'mid-download') {
      expect(await readFile(join(dataDir, 'fetch.log'), 'utf8')).toMatch(/ [1-9]\d*\n/); // a resumed fetch
    }
  });
});
