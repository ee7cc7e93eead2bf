import { spawnSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseCertificatePem, verifyReceipt } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assignmentFor } from './helpers/agent-fixture.js';
import { compileChild } from './helpers/compile-child.js';
import type { CrashScenario } from './helpers/crash-child.js';
import { PRODUCT, PROFILE, TENANT, buildRelease, makeDevice, sha, type DeviceFixture } from './helpers/release-fixture.js';
import { tempDir } from './helpers/tools.js';

/**
 * STYLE 10: kill a real agent process at every journal step, restart it, and check it
 * converges and the receipt tells the truth. Interrupted activations are rolled back first.
 */
interface Row {
  name: string;
  killIn: string;
  killEveryTime?: boolean;
  /** States that must appear in the journal, in this order (not necessarily adjacent). */
  expectStates: string[];
  /** States that must not appear at all. */
  neverStates?: string[];
  expectReceipt: { activation: string; verdicts: string[] };
  expectFiles: 'v1' | 'v2';
}

const CONVERGED = ['desired-persisted', 'downloading', 'downloaded', 'staged', 'activating', 'committing', 'committed', 'receipt-persisted'];
const RETRIED = ['activating', 'rolling-back', 'staged', 'activating', 'group-healthy', 'committed', 'receipt-persisted'];

const rows: Row[] = [
  { name: 'after desired state persisted', killIn: 'after-desired-state-persisted', expectStates: CONVERGED, neverStates: ['rolling-back'], expectReceipt: { activation: 'activated', verdicts: ['committed', 'committed'] }, expectFiles: 'v2' },
  { name: 'mid-download (resumes from the partial file)', killIn: 'mid-download', expectStates: CONVERGED, neverStates: ['rolling-back'], expectReceipt: { activation: 'activated', verdicts: ['committed', 'committed'] }, expectFiles: 'v2' },
  { name: 'after download', killIn: 'after-download', expectStates: CONVERGED, neverStates: ['rolling-back'], expectReceipt: { activation: 'activated', verdicts: ['committed', 'committed'] }, expectFiles: 'v2' },
  { name: 'after stage', killIn: 'after-stage', expectStates: CONVERGED, neverStates: ['rolling-back'], expectReceipt: { activation: 'activated', verdicts: ['committed', 'committed'] }, expectFiles: 'v2' },
  { name: 'mid-activation of group 1', killIn: 'mid-activation-0', expectStates: RETRIED, expectReceipt: { activation: 'activated', verdicts: ['committed', 'committed'] }, expectFiles: 'v2' },
  { name: 'after group 1 health', killIn: 'after-health-0', expectStates: RETRIED, expectReceipt: { activation: 'activated', verdicts: ['committed', 'committed'] }, expectFiles: 'v2' },
  { name: 'mid-activation of group 2', killIn: 'mid-activation-1', expectStates: RETRIED, expectReceipt: { activation: 'activated', verdicts: ['committed', 'committed'] }, expectFiles: 'v2' },
  { name: 'before receipt', killIn: 'before-receipt', expectStates: CONVERGED, neverStates: ['rolling-back'], expectReceipt: { activation: 'activated', verdicts: ['committed', 'committed'] }, expectFiles: 'v2' },
  { name: 'after receipt, before upload (same bytes kept)', killIn: 'after-receipt-before-upload', expectStates: CONVERGED, neverStates: ['rolling-back'], expectReceipt: { activation: 'activated', verdicts: ['committed', 'committed'] }, expectFiles: 'v2' },
  {
    name: 'killed in activation every time: loop guard rolls back and fails it',
    killIn: 'mid-activation-0',
    killEveryTime: true,
    expectStates: ['activating', 'rolling-back', 'staged', 'activating', 'rolling-back', 'rolled-back', 'receipt-persisted'],
    neverStates: ['committed'],
    expectReceipt: { activation: 'rolled-back', verdicts: ['rolled-back', 'not-attempted'] },
    expectFiles: 'v1',
  },
];

let root: { dir: string; cleanup: () => Promise<void> };
let device: DeviceFixture;
let child: string;
beforeAll(async () => {
  root = await tempDir();
  device = await makeDevice(join(root.dir, 'pki'));
  child = await compileChild(join(root.dir, 'build'), 'crash-child.ts');
});
afterAll(() => root.cleanup());

describe.sequential('crash table: SIGKILL at every journal step, restart, converge', () => {
  let n = 0;
  it.each(rows)('$name', async (row) => {
    const dir = join(root.dir, `case-${++n}`);
    const dataDir = join(dir, 'data');
    const targetsDir = join(dir, 'targets');
    await mkdir(targetsDir, { recursive: true });
    // v1 of both members is live before the transaction
    for (const [kind, name] of [['model', 'model-a'], ['config', 'conf-b']]) {
      await mkdir(join(dataDir, 'placed', kind!), { recursive: true });
      await writeFile(join(dataDir, 'placed', kind!, name!), `${name}-v1`);
    }
    const rel = buildRelease({
      components: [
        { name: 'model-a', kind: 'model', content: 'model-a-v2'.repeat(1000) },
        { name: 'conf-b', kind: 'config', content: 'conf-b-v2' },
      ],
      groups: [['model-a'], ['conf-b']],
    });
    for (const [path, bytes] of rel.targets) await writeFile(join(targetsDir, encodeURIComponent(path)), bytes);
    await writeFile(join(dir, 'envelope.json'), rel.envelope);
    const { envelope: _e, ...assignment } = assignmentFor(rel, 'tx-crash');
    const scenario: CrashScenario = {
      dataDir,
      killAt: row.killIn,
      ...(row.killEveryTime ? { killEveryTime: true } : {}),
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

    const run = () => spawnSync(process.execPath, [child, join(dir, 'scenario.json')], { encoding: 'utf8', timeout: 20_000 });
    const first = run();
    expect(first.signal, first.stderr).toBe('SIGKILL');
    const receiptFile = join(dataDir, 'outbox', 'tx-crash.receipt.json');
    const before = row.killIn === 'after-receipt-before-upload' ? await readFile(receiptFile) : null;
    let last = run();
    for (let i = 0; i < 5 && last.signal === 'SIGKILL'; i++) last = run();
    expect(last.status, last.stderr).toBe(0);
    const outcomes = JSON.parse(last.stdout.trim()) as { status: string; activation?: string }[];
    expect(outcomes.at(-1)).toMatchObject({ status: 'done', activation: row.expectReceipt.activation });

    const states = (await readFile(join(dataDir, 'journal', 'journal.jsonl'), 'utf8'))
      .trim().split('\n').map((l) => JSON.parse(l) as { kind: string; state?: string; event?: string })
      .filter((r) => r.kind === 'tx' && r.event !== 'snapshot' && r.event !== 'resumed').map((r) => r.state!);
    let at = 0;
    for (const s of states) if (s === row.expectStates[at]) at++;
    expect(at, `journal states ${states.join(' > ')}`).toBe(row.expectStates.length);
    for (const s of row.neverStates ?? []) expect(states).not.toContain(s);

    const bytes = await readFile(receiptFile);
    if (before) expect(bytes.equals(before)).toBe(true);
    const receipt = verifyReceipt(JSON.parse(bytes.toString('utf8')), { ca: parseCertificatePem(device.caPem), tenant: TENANT, device: device.name, now: new Date() }).payload;
    expect(receipt.activation).toBe(row.expectReceipt.activation);
    expect(receipt.members!.map((m) => m.verdict)).toEqual(row.expectReceipt.verdicts);
    expect(receipt.members![0]!.previous_digest).toBe(sha('model-a-v1'));

    const suffix = row.expectFiles === 'v2' ? ['model-a-v2'.repeat(1000), 'conf-b-v2'] : ['model-a-v1', 'conf-b-v1'];
    expect(await readFile(join(dataDir, 'placed', 'model', 'model-a'), 'utf8')).toBe(suffix[0]);
    expect(await readFile(join(dataDir, 'placed', 'config', 'conf-b'), 'utf8')).toBe(suffix[1]);
    if (row.killIn === 'mid-download') {
      expect(await readFile(join(dataDir, 'fetch.log'), 'utf8')).toMatch(/ [1-9]\d*\n/); // a resumed fetch
    }
  });
});
