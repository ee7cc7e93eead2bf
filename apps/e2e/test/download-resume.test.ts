import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, LinkProxy, waitFor, type Proc } from '../src/index.js';
import { tempDir } from '@svc/test-kit';

/**
 * Downloads that survive their link and their process (docs/agent.md "Downloads"): a real
 * server and real agent processes, each behind its own TCP proxy that stands for the device's
 * link. The proxy counts what the server sent over it, throttles it so a few MiB take a few
 * seconds, and drops it. A link cut mid-member: the agent continues from where the stream
 * stopped and the link carries the member about once, not twice. The agent SIGKILLed
 * mid-member and started again: it continues from the offset it journaled. A link that stays
 * down: the transaction fails after the configured number of attempts without progress, and
 * the delivery report beside its receipt says why.
 */
const MiB = 1024 * 1024;
const DEVICES = ['cut-link', 'killed', 'dead-link'];

interface Delivery {
  device: string;
  component: string;
  method: string;
  bytes_transferred: number;
  full_length: number;
  attempts: number | null;
  resumes: number | null;
  failure: string | null;
  failure_detail: string | null;
}

interface JournalLine {
  kind: string;
  state?: string;
  data?: Record<string, { offset?: number; attempts?: number; stalled?: number } | undefined>;
}

describe('downloads resume across link loss and agent restarts (embedded store)', () => {
  let root: { dir: string; cleanup: () => Promise<void> };
  let fleet: Fleet;
  let token: string;
  const links = new Map<string, LinkProxy>();
  let version = 0;

  beforeAll(async () => {
    root = await tempDir('e2e-resume');
    fleet = await Fleet.start({ root: root.dir, devices: [] });
    token = await fleet.api.enrollToken('resume', DEVICES.length);
  });
  afterAll(async () => {
    await fleet?.stop();
    for (const l of links.values()) await l.stop();
    await root?.cleanup();
  });

  /** Enrolls `name` with its agent dialing the server through its own link. */
  async function deviceBehindLink(name: string, env: NodeJS.ProcessEnv = {}): Promise<{ link: LinkProxy; agent: Proc }> {
    const link = await LinkProxy.start(fleet.server.deviceAddr);
    links.set(name, link);
    const agent = await fleet.startAgent(name, { token, deviceAddr: link.addr, env });
    await fleet.waitOnline([name]);
    return { link, agent };
  }

  /** A signed one-member release of `bytes` rolled out to `name` alone; its rollout and transaction. */
  async function rollOut(name: string, bytes: Buffer): Promise<{ rollout: string; tx: string }> {
    version += 1;
    const v = `1.0.${version}`;
    const artifact = await fleet.api.uploadArtifact({ name: 'detector', version: v, kind: 'model', filename: 'detector.onnx', bytes });
    const group = await fleet.createGroup(`g-${name}`, [name]);
    const probes = [
      { name: 'model-present', type: 'command' as const, command: ['/bin/sh', '-c', 'test -s "$SVC_AGENT_DATA_DIR/placed/model/detector"'], timeout_s: 10 },
    ];
    const { release } = await fleet.signAndSubmit({ version: v, components: [{ name: 'detector', artifact }], orderedGroups: [['detector']], group, probes });
    const ro = await fleet.startRollout(release.id);
    return { rollout: ro.id, tx: ro.transaction_id! };
  }

  async function delivery(rollout: string, device: string): Promise<Delivery> {
    return waitFor(
      `${device}'s delivery report`,
      async () => (await fleet.api.get<{ deliveries: Delivery[] }>(`/rollouts/${rollout}/delivery`)).deliveries.find((d) => d.device === device),
      120_000,
    );
  }

  async function journal(name: string): Promise<JournalLine[]> {
    const text = await readFile(join(fleet.dataDir(name), 'journal', 'journal.jsonl'), 'utf8').catch(() => '');
    return text
      .split('\n')
      .filter((l) => l.endsWith('}'))
      .map((l) => JSON.parse(l) as JournalLine);
  }

  /** The download offset the journal holds for the member, 0 when none. */
  async function journaledOffset(name: string): Promise<number> {
    const offsets = (await journal(name)).map((r) => r.data?.['download:detector']?.offset).filter((o): o is number => o !== undefined);
    return offsets.at(-1) ?? 0;
  }

  it('a link cut mid-member: the download continues where the stream stopped, the member crosses the link once, and commits', async () => {
    const { link } = await deviceBehindLink('cut-link');
    const member = randomBytes(4 * MiB);
    link.throttle(4 * MiB);
    const before = link.downstream;
    const { rollout, tx } = await rollOut('cut-link', member);
    // about half the member has crossed when the link drops; it comes back at once
    await link.cutAfter(2 * MiB, 'up');
    const connectionsAtCut = link.connections;
    expect(await fleet.waitSettled(tx)).toMatchObject({ state: 'committed' });
    expect((await readFile(join(fleet.dataDir('cut-link'), 'placed', 'model', 'detector'))).equals(member)).toBe(true);
    expect(link.connections).toBeGreaterThan(connectionsAtCut);
    const d = await delivery(rollout, 'cut-link');
    // every byte of the member received exactly once: the second attempt asked for the rest
    expect(d).toMatchObject({ method: 'full', full_length: member.length, bytes_transferred: member.length, failure: null });
    // the cut attempt and the one that finished (plus any that found the link still reconnecting)
    expect(d.attempts).toBeGreaterThanOrEqual(2);
    expect(d.resumes).toBe(d.attempts! - 1);
    // what the server sent over the link: the member once plus TLS, HTTP/2, TUF metadata and check-ins, far from twice
    const carried = link.downstream - before;
    expect(carried).toBeGreaterThan(member.length);
    expect(carried).toBeLessThan(member.length * 1.25);
  });

  it('the agent SIGKILLed mid-member and started again: it continues from the journaled offset, installs, and the receipt is accepted', async () => {
    const { link, agent } = await deviceBehindLink('killed');
    const member = randomBytes(6 * MiB);
    link.throttle(2 * MiB);
    const before = link.downstream;
    const { rollout, tx } = await rollOut('killed', member);
    // half the member is durable (fsynced and journaled): kill the process there
    await waitFor('half the member journaled', async () => (await journaledOffset('killed')) >= 3 * MiB, 120_000, 20);
    await agent.kill();
    const kept = await journaledOffset('killed');
    expect(kept).toBeGreaterThanOrEqual(3 * MiB);
    expect(kept).toBeLessThan(member.length);
    const carriedBeforeKill = link.downstream - before;

    const restarted = await fleet.startAgent('killed', { deviceAddr: link.addr });
    const atRestart = link.downstream;
    expect(await fleet.waitSettled(tx)).toMatchObject({ state: 'committed' });
    expect((await readFile(join(fleet.dataDir('killed'), 'placed', 'model', 'detector'))).equals(member)).toBe(true);
    // the restarted agent asked for the member from the journaled offset, not from zero
    const resumed = restarted.lines.find((l) => l.includes('"msg":"download resumed"'));
    expect(resumed, restarted.tail()).toBeDefined();
    expect(JSON.parse(resumed!)).toMatchObject({ target: 'full', from: kept });
    // after the restart the link carried the rest of the member, not all of it
    const carriedAfter = link.downstream - atRestart;
    expect(carriedAfter).toBeGreaterThan(member.length - kept);
    expect(carriedAfter).toBeLessThan((member.length - kept) * 1.15 + 256 * 1024);
    expect(carriedBeforeKill + carriedAfter).toBeLessThan(member.length * 1.3);
    const d = await delivery(rollout, 'killed');
    expect(d).toMatchObject({ method: 'full', full_length: member.length, resumes: 1, failure: null });
    expect(d.attempts).toBeGreaterThanOrEqual(2);
    // counted to the last checkpoint before the kill, then every byte after it
    expect(d.bytes_transferred).toBeGreaterThanOrEqual(member.length);
    expect(d.bytes_transferred).toBeLessThan(member.length + 2 * MiB);
    // the receipt was accepted: the outbox is empty and the transaction closed in the journal
    await waitFor('the receipt accepted', async () => (await journal('killed')).some((r) => r.state === 'reported'), 60_000);
  });

  it('a link that stays down: the download fails after SVC_AGENT_DOWNLOAD_ATTEMPTS attempts without progress, with the reason beside the receipt', async () => {
    const { link, agent } = await deviceBehindLink('dead-link', { SVC_AGENT_DOWNLOAD_ATTEMPTS: '3' });
    const member = randomBytes(4 * MiB);
    link.throttle(4 * MiB);
    const { rollout, tx } = await rollOut('dead-link', member);
    await link.cutAfter(1 * MiB, 'down');
    // attempts 2..4 reach no server: the third in a row without progress ends the transaction
    await waitFor('the transaction failed on the device', async () => (await journal('dead-link')).some((r) => r.state === 'failed'), 120_000);
    const lastProgress = (await journal('dead-link'))
      .map((r) => r.data?.['download:detector'])
      .filter((p) => p !== undefined)
      .at(-1)!;
    expect(lastProgress).toMatchObject({ attempts: 4, stalled: 3 });
    link.up();
    expect(await fleet.waitSettled(tx)).toMatchObject({ state: 'failed' });
    const d = await delivery(rollout, 'dead-link');
    expect(d).toMatchObject({ method: 'full', full_length: member.length, attempts: 4, resumes: 3, failure: 'DOWNLOAD_RETRIES_EXHAUSTED' });
    expect(d.failure_detail).toContain('3 attempts in a row without progress (bound 3)');
    expect(d.bytes_transferred).toBeGreaterThan(0);
    expect(d.bytes_transferred).toBeLessThan(member.length);
    const result = await fleet.api.get<{ devices: { device: string; state: string; members: { verdict?: string; resulting_digest: string | null }[] }[] }>(
      `/release-transactions/${tx}/result`,
    );
    expect(result.devices.find((x) => x.device === 'dead-link')).toMatchObject({ state: 'failed' });
    // nothing was placed: a failed download touches nothing live
    await expect(readFile(join(fleet.dataDir('dead-link'), 'placed', 'model', 'detector'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(agent.lines.some((l) => l.includes('download interrupted, retrying'))).toBe(true);
  });
});
