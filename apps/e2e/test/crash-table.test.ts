import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, readTar, waitFor } from '../src/index.js';
import { readJournal } from './helpers/journal.js';
import { tempRoot } from './helpers/temp.js';

/**
 * Issue 5, scenario 4 (STYLE 10): the real agent process is SIGKILLed at every journal step
 * of a two-component transaction (SVC_AGENT_CRASH_AT, the agent's test hook on the
 * orchestrator's named steps), then restarted without the hook. It must converge, and the
 * server must end with exactly one accepted receipt for the device that tells the truth.
 * Rows run one after another against one server; each row is a new device and release.
 */
interface Row {
  name: string;
  killIn: string;
  /** An interrupted activation is rolled back before the retry (agent recovery table). */
  rollsBackFirst: boolean;
}

const rows: Row[] = [
  { name: 'after the desired state is persisted', killIn: 'after-desired-state-persisted', rollsBackFirst: false },
  { name: 'after download', killIn: 'after-download', rollsBackFirst: false },
  { name: 'after stage', killIn: 'after-stage', rollsBackFirst: false },
  { name: 'mid-activation of group 1', killIn: 'mid-activation-0', rollsBackFirst: true },
  { name: 'after group 1 health', killIn: 'after-health-0', rollsBackFirst: true },
  { name: 'mid-activation of group 2', killIn: 'mid-activation-1', rollsBackFirst: true },
  { name: 'after group 2 health', killIn: 'after-health-1', rollsBackFirst: true },
  { name: 'before the receipt is written', killIn: 'before-receipt', rollsBackFirst: false },
  { name: 'after the receipt is persisted, before upload', killIn: 'after-receipt-before-upload', rollsBackFirst: false },
];

describe.sequential('crash table: SIGKILL the real agent at every journal step, restart, converge', () => {
  let root: { dir: string; cleanup: () => Promise<void> };
  let fleet: Fleet;
  beforeAll(async () => {
    root = await tempRoot('crash');
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
    const crashing = await fleet.startAgent(device, { token: await fleet.api.enrollToken(device, 1), env: { SVC_AGENT_CRASH_AT: row.killIn } });
    const config = Buffer.from(`config for ${device}\n`);
    const model = Buffer.from(`model for ${device}\n`.repeat(2000));
    const c = await fleet.api.uploadArtifact({ name: 'app-config', version, kind: 'config', filename: 'app.toml', bytes: config });
    const m = await fleet.api.uploadArtifact({ name: 'detector', version, kind: 'model', filename: 'detector.onnx', bytes: model });
    const group = await fleet.createGroup(`crash-${i}`, [device]);
    const { release } = await fleet.signAndSubmit({
      version,
      components: [{ name: 'app-config', artifact: c }, { name: 'detector', artifact: m }],
      orderedGroups: [['app-config'], ['detector']],
      group,
      probes: [{ name: 'config-present', type: 'command', command: ['/bin/sh', '-c', 'test -s "$SVC_AGENT_DATA_DIR/placed/config/app-config"'], timeout_s: 10 }],
    });
    const txId = (await fleet.startRollout(release.id)).transaction_id!;

    // the hook really killed the process at that step
    const exit = await waitFor(`${device} to die at ${row.killIn}`, () => (crashing.running ? undefined : crashing.exited), 30_000);
    expect(exit.signal, crashing.tail()).toBe('SIGKILL');
    const beforeRestart = (await fleet.api.get<{ state: string }>(`/release-transactions/${txId}`)).state;
    expect(beforeRestart).toBe('running');

    // a receipt persisted before the crash is uploaded from those exact bytes (spec 2.3.2)
    const persisted = row.killIn === 'after-receipt-before-upload' ? await readFile(join(fleet.dataDir(device), 'outbox', `${txId}.receipt.json`)) : null;

    await fleet.startAgent(device);
    const tx = await fleet.waitSettled(txId);
    expect(tx.state).toBe('committed');

    // exactly one accepted receipt for this device and transaction, and it states the truth
    const { index, receipts } = await fleet.exportReceipts(txId);
    expect(index.map((l) => l.device)).toEqual([device]);
    if (persisted) expect(receipts.get(index[0]!.file as string)!.equals(persisted)).toBe(true);
    const result = await fleet.api.get<{ devices: { device: string; state: string; members: { verdict: string }[] }[] }>(`/release-transactions/${txId}/result`);
    expect(result.devices.map((d) => [d.device, d.state, d.members.map((x) => x.verdict)])).toEqual([[device, 'committed', ['committed', 'committed']]]);
    // and what the receipt claims is what is on the device
    expect(await readFile(join(fleet.dataDir(device), 'placed', 'config', 'app-config'))).toEqual(config);
    expect(await readFile(join(fleet.dataDir(device), 'placed', 'model', 'detector'))).toEqual(model);

    const states = (await readJournal(fleet.dataDir(device))).filter((l) => l.tx === txId && l.event !== 'snapshot').map((l) => l.state);
    if (row.rollsBackFirst) expect(states, states.join(' > ')).toContain('rolling-back');
    else expect(states, states.join(' > ')).not.toContain('rolling-back');
    expect(states).toContain('committed');
    await fleet.agents.get(device)!.stop();
  });

  it('the server never stored a duplicate: one receipt per crashed device in the whole export', async () => {
    const res = await fleet.api.raw('GET', '/release-receipts/export', undefined, 200);
    const entries = readTar(Buffer.from(await res.arrayBuffer()));
    const index = entries.find((e) => e.name === 'index.jsonl')!.bytes.toString('utf8').trim().split('\n').map((l) => JSON.parse(l) as { device: string });
    expect(index.map((l) => l.device).sort()).toEqual(rows.map((_, i) => `crash-${i + 1}`).sort());
    expect(entries.filter((e) => e.name.startsWith('receipts/'))).toHaveLength(rows.length);
  });
});
