import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, open, readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CRASH_POINTS } from '@svc/agent';
import { parseCertificatePem, verifyReceipt } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, readTar, waitFor, type HealthProbe } from '../src/index.js';
import { readJournal } from './helpers/journal.js';
import { tempDir } from '@svc/test-kit';

/**
 * The real agent process is SIGKILLed at a crash point of a two-component transaction (the
 * e2e crash hook preloaded with `node --import`, listening to the agent's crash-point
 * channel), then restarted without it (or with it again, for the loop guard). Each row
 * asserts the journal's EXACT chain of states (Mender `state_chain`), where the kill landed,
 * the server's outcome, one accepted receipt that verifies and tells the truth, and the files
 * on the device. Downloads go through the production TUF fetcher over the mTLS channel; two
 * rows change the served bytes on the server after a mid-download kill. Rows run one after
 * another against one server; each row is a new device and release.
 */
interface Row {
  name: string;
  killIn: string;
  /** The restarted agent is killed at the same point again, until the loop guard fails it. */
  killEveryTime?: boolean;
  /** After the kill, change one byte of the detector's blob on the server. */
  tamper?: 'downloaded-head' | 'missing-tail';
  /** A group-1 probe that always fails: the transaction rolls back after group 1. */
  failGroup1?: boolean;
  /** Every state change the journal recorded, in order; default: the two-groups chain of `killIn`. */
  expectStates?: string[];
  expect: { state: 'committed' | 'rolled back' | 'failed'; verdicts: readonly [string, string]; activation: string };
  /** What the device holds afterwards: the new files, or none (a rolled-back first install). */
  expectFiles: 'new' | 'none';
}

/**
 * The exact state chains of the agent's own crash table (apps/agent/test/vectors/crash-chains.json),
 * each followed here by "reported": this agent uploads its receipt.
 */
const CHAINS = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'agent', 'test', 'vectors', 'crash-chains.json'), 'utf8')) as {
  'two-groups': Record<string, string[]>;
  'group-1-unhealthy': string[];
  'bytes-refused': string[];
  'loop-guard': string[];
};
const reported = (states: string[] | undefined, what: string): string[] => {
  if (states === undefined) throw new Error(`crash-chains.json: no chain for ${what}`);
  return [...states, 'reported'];
};
const COMMITTED = { state: 'committed', verdicts: ['committed', 'committed'], activation: 'activated' } as const;

const rows: Row[] = [
  { name: 'after the desired state is persisted', killIn: 'after-desired-state-persisted', expect: COMMITTED, expectFiles: 'new' },
  {
    name: 'between recording the live digests and starting the download',
    killIn: 'previous-digests-recorded',
    expect: COMMITTED,
    expectFiles: 'new',
  },
  {
    name: 'mid-download; the bytes already downloaded then change on the server: resumed past them, committed',
    killIn: 'mid-download',
    tamper: 'downloaded-head',
    expect: COMMITTED,
    expectFiles: 'new',
  },
  {
    name: 'mid-download; the bytes not yet downloaded change on the server: they do not match TUF, failed',
    killIn: 'mid-download',
    tamper: 'missing-tail',
    expectStates: reported(CHAINS['bytes-refused'], 'bytes-refused'),
    expect: { state: 'failed', verdicts: ['not-attempted', 'failed'], activation: 'failed' },
    expectFiles: 'none',
  },
  { name: 'after download', killIn: 'after-download', expect: COMMITTED, expectFiles: 'new' },
  { name: 'after stage', killIn: 'after-stage', expect: COMMITTED, expectFiles: 'new' },
  {
    name: 'inside the file driver, between link and rename',
    killIn: 'mid-driver-write',
    expect: COMMITTED,
    expectFiles: 'new',
  },
  {
    name: 'mid-activation of group 0',
    killIn: 'mid-activation-0',
    expect: COMMITTED,
    expectFiles: 'new',
  },
  {
    name: 'before group 0 health',
    killIn: 'before-health-0',
    expect: COMMITTED,
    expectFiles: 'new',
  },
  { name: 'after group 0 health', killIn: 'after-health-0', expect: COMMITTED, expectFiles: 'new' },
  {
    name: 'mid-activation of group 1',
    killIn: 'mid-activation-1',
    expect: COMMITTED,
    expectFiles: 'new',
  },
  {
    name: 'before group 1 health',
    killIn: 'before-health-1',
    expect: COMMITTED,
    expectFiles: 'new',
  },
  { name: 'after group 1 health', killIn: 'after-health-1', expect: COMMITTED, expectFiles: 'new' },
  { name: 'mid-commit', killIn: 'mid-commit', expect: COMMITTED, expectFiles: 'new' },
  {
    name: 'mid-rollback after group 1 failed its own probe',
    killIn: 'mid-rollback',
    failGroup1: true,
    expectStates: reported(CHAINS['group-1-unhealthy'], 'group-1-unhealthy'),
    expect: { state: 'rolled back', verdicts: ['rolled-back', 'rolled-back'], activation: 'rolled-back' },
    expectFiles: 'none',
  },
  { name: 'before the receipt is written', killIn: 'before-receipt', expect: COMMITTED, expectFiles: 'new' },
  {
    name: 'after the receipt is persisted, before upload',
    killIn: 'after-receipt-before-upload',
    expect: COMMITTED,
    expectFiles: 'new',
  },
  {
    name: 'in activation at every start: the loop guard rolls back and fails it',
    killIn: 'mid-activation-0',
    killEveryTime: true,
    expectStates: reported(CHAINS['loop-guard'], 'loop-guard'),
    expect: { state: 'rolled back', verdicts: ['rolled-back', 'not-attempted'], activation: 'rolled-back' },
    expectFiles: 'none',
  },
];

const patternOf = (point: string) => point.replace(/-\d+$/, '-<group>');

describe('e2e crash table rows', () => {
  it('kill the real agent at every crash point of a file transaction (os-bundle reboots: apps/agent and os-bundle-rauc)', () => {
    const covered = new Set(rows.map((r) => patternOf(r.killIn)));
    expect([...covered].sort()).toEqual(
      Object.keys(CRASH_POINTS)
        .filter((p) => p !== 'reboot-requested')
        .sort(),
    );
  });
});

describe.sequential('crash table: SIGKILL the real agent at a crash point, restart, converge', () => {
  let root: { dir: string; cleanup: () => Promise<void> };
  let fleet: Fleet;
  beforeAll(async () => {
    root = await tempDir('e2e-crash');
    fleet = await Fleet.start({ root: root.dir, devices: [] });
  });
  afterAll(async () => {
    await fleet?.stop();
    await root?.cleanup();
  });

  let n = 0;
  it.each(rows)('killed $name', async (row) => {
    const i = ++n;
    const device = `crash-${i}`;
    const version = `1.0.${i}`;
    const record = join(root.dir, `crash-${i}.json`);
    const crashAt = { point: row.killIn, record };
    const env = row.killEveryTime ? { SVC_AGENT_MAX_RESUMPTIONS: '2' } : {};
    const crashing = await fleet.startAgent(device, { token: await fleet.api.enrollToken(device, 1), crashAt, env });
    const config = Buffer.from(`config for ${device}\n`);
    // more than one 64 KiB chunk of GetFile: the download can be cut in the middle
    const model = Buffer.from(`model for ${device}\n`.repeat(8000));
    const c = await fleet.api.uploadArtifact({ name: 'app-config', version, kind: 'config', filename: 'app.toml', bytes: config });
    const m = await fleet.api.uploadArtifact({ name: 'detector', version, kind: 'model', filename: 'detector.onnx', bytes: model });
    const group = await fleet.createGroup(`crash-${i}`, [device]);
    const probes: HealthProbe[] = [
      { name: 'config-present', type: 'command', command: ['/bin/sh', '-c', 'test -s "$SVC_AGENT_DATA_DIR/placed/config/app-config"'], timeout_s: 10 },
      { name: 'detector-present', type: 'command', command: ['/bin/sh', '-c', 'test -s "$SVC_AGENT_DATA_DIR/placed/model/detector"'], timeout_s: 10, group: 1 },
      ...(row.failGroup1 ? [{ name: 'detector-broken', type: 'command' as const, command: ['/bin/false'], timeout_s: 10, group: 1 }] : []),
    ];
    const { release } = await fleet.signAndSubmit({
      version,
      components: [
        { name: 'app-config', artifact: c },
        { name: 'detector', artifact: m },
      ],
      orderedGroups: [['app-config'], ['detector']],
      group,
      probes,
    });
    const txId = (await fleet.startRollout(release.id)).transaction_id!;

    // the hook really killed the process there, with the journal in a state CRASH_POINTS names
    const exit = await waitFor(`${device} to die at ${row.killIn}`, () => (crashing.running ? undefined : crashing.exited), 60_000);
    expect(exit.signal, crashing.tail()).toBe('SIGKILL');
    const killed = JSON.parse(await readFile(record, 'utf8')) as { point: string; state: string };
    expect(killed.point).toBe(row.killIn);
    expect(CRASH_POINTS[patternOf(row.killIn) as keyof typeof CRASH_POINTS].states as readonly string[]).toContain(killed.state);
    expect((await fleet.api.get<{ state: string }>(`/release-transactions/${txId}`)).state).toBe('running');

    const staging = join(fleet.dataDir(device), 'staging', encodeURIComponent(txId));
    if (row.tamper) {
      // a partial download is on disk: some bytes, not all
      const part = (await stat(join(staging, 'detector.part'))).size;
      expect(part).toBeGreaterThan(0);
      expect(part).toBeLessThan(model.length);
      await flipByte(join(root.dir, 'server', 'blobs', 'sha256', m.digest.slice('sha256:'.length)), row.tamper === 'downloaded-head' ? 10 : model.length - 10);
    }
    // a receipt persisted before the crash is uploaded from those exact bytes (spec §2.3)
    const persisted = row.killIn === 'after-receipt-before-upload' ? await readFile(join(fleet.dataDir(device), 'outbox', `${txId}.receipt.json`)) : null;

    let agent = await fleet.startAgent(device, { env, ...(row.killEveryTime ? { crashAt } : {}) });
    const tx = await waitFor(
      `transaction ${txId} to settle`,
      async () => {
        const view = await fleet.api.get<{ state: string }>(`/release-transactions/${txId}`);
        if (view.state !== 'running') return view;
        // the loop-guard row: every start is killed again until the guard fails the transaction
        if (row.killEveryTime && !agent.running) agent = await fleet.startAgent(device, { env, crashAt });
        return undefined;
      },
      90_000,
      250,
    );
    expect(tx.state).toBe(row.expect.state);

    // exactly one accepted receipt for this device and transaction; it verifies and states the truth
    const { index, receipts } = await fleet.exportReceipts(txId);
    expect(index.map((l) => l.device)).toEqual([device]);
    const bytes = receipts.get(index[0]!.file as string)!;
    if (persisted) expect(bytes.equals(persisted)).toBe(true);
    const receipt = verifyReceipt(JSON.parse(bytes.toString('utf8')), {
      ca: parseCertificatePem(await readFile(fleet.deviceCaFile(device), 'utf8')),
      tenant: fleet.tenant,
      device,
      now: new Date(),
    }).payload;
    expect(receipt.activation).toBe(row.expect.activation);
    expect(receipt.members!.map((x) => [x.component, x.verdict])).toEqual([
      ['app-config', row.expect.verdicts[0]],
      ['detector', row.expect.verdicts[1]],
    ]);
    const result = await fleet.api.get<{ devices: { device: string; state: string; members: { verdict: string }[] }[] }>(
      `/release-transactions/${txId}/result`,
    );
    expect(result.devices.map((d) => [d.device, d.state, d.members.map((x) => x.verdict)])).toEqual([[device, row.expect.state, row.expect.verdicts]]);

    // what the receipt claims is what is on the device
    const placedConfig = join(fleet.dataDir(device), 'placed', 'config', 'app-config');
    const placedModel = join(fleet.dataDir(device), 'placed', 'model', 'detector');
    if (row.expectFiles === 'new') {
      expect(await readFile(placedConfig)).toEqual(config);
      // resumed at the partial file's end: the changed head was never fetched again
      expect(
        createHash('sha256')
          .update(await readFile(placedModel))
          .digest('hex'),
      ).toBe(m.digest.slice('sha256:'.length));
    } else {
      await expect(stat(placedConfig)).rejects.toMatchObject({ code: 'ENOENT' });
      await expect(stat(placedModel)).rejects.toMatchObject({ code: 'ENOENT' });
    }
    if (row.tamper === 'missing-tail') {
      // bytes that do not match the signed metadata are not kept to resume from
      expect((await readdir(staging)).filter((f) => f.startsWith('detector'))).toEqual([]);
    }

    // the exact chain of states, once the agent has closed the transaction
    const states = await waitFor(
      `${device} to journal the upload`,
      async () => {
        const s = (await readJournal(fleet.dataDir(device)))
          .filter((l) => l.tx === txId && l.event !== 'snapshot' && l.event !== 'resumed')
          .map((l) => l.state);
        return s.at(-1) === 'reported' ? s : undefined;
      },
      30_000,
    );
    expect(states).toEqual(row.expectStates ?? reported(CHAINS['two-groups'][row.killIn], row.killIn));
    await agent.stop();
  });

  it('the server never stored a duplicate: one receipt per crashed device in the whole export', async () => {
    const res = await fleet.api.raw('GET', '/release-receipts/export', undefined, 200);
    const entries = readTar(Buffer.from(await res.arrayBuffer()));
    const index = entries
      .find((e) => e.name === 'index.jsonl')!
      .bytes.toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { device: string });
    expect(index.map((l) => l.device).sort()).toEqual(rows.map((_, i) => `crash-${i + 1}`).sort());
    expect(entries.filter((e) => e.name.startsWith('receipts/'))).toHaveLength(rows.length);
  });
});

/** Changes one byte of a stored blob in place (the server serves blobs as they are on disk). */
async function flipByte(file: string, at: number): Promise<void> {
  await chmod(file, 0o644);
  const h = await open(file, 'r+');
  try {
    const b = Buffer.alloc(1);
    await h.read(b, 0, 1, at);
    b[0] = b[0]! ^ 0xff;
    await h.write(b, 0, 1, at);
  } finally {
    await h.close();
  }
}
