import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseCertificatePem, verifyReceipt, generateKeyPair, checkReceiptAgainstRelease, verifyRelease, parseEnvelope } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentError, DOWNLOAD, type HealthChecker } from '../src/index.js';
import { FakeMemberDriver, type DriverCall } from './helpers/fake-member-driver.js';
import { assignmentFor, makeOrchestrator } from './helpers/agent-fixture.js';
import { MemoryFetcher, PRODUCT, TENANT, buildRelease, makeDevice, type DeviceFixture } from './helpers/release-fixture.js';
import { tempDir } from './helpers/tools.js';

let root: { dir: string; cleanup: () => Promise<void> };
let device: DeviceFixture;
beforeAll(async () => {
  root = await tempDir();
  device = await makeDevice(join(root.dir, 'pki'));
});
afterAll(() => root.cleanup());

let n = 0;
async function scenario(opts: { groups: string[][]; health?: HealthChecker; failActivate?: string[]; trusted?: 'signer' | 'other' | 'none' }) {
  const dataDir = join(root.dir, `agent-${++n}`);
  const calls: DriverCall[] = [];
  const container = new FakeMemberDriver('container', calls);
  const model = new FakeMemberDriver('model', calls);
  for (const c of opts.failActivate ?? []) {
    container.failActivate.add(c);
    model.failActivate.add(c);
  }
  const names = opts.groups.flat();
  const rel = buildRelease({
    components: names.map((name) => ({ name, kind: name.startsWith('app') ? 'container' : 'model', content: `${name}-v2` })),
    groups: opts.groups,
  });
  const fetcher = new MemoryFetcher(rel.targets);
  const trusted = opts.trusted === 'none' ? null : opts.trusted === 'other' ? [generateKeyPair('ed25519').publicKey] : [rel.publicKey];
  const { orchestrator, journal } = await makeOrchestrator({
    dataDir,
    device,
    drivers: { container, model },
    fetcher,
    trustedKeys: trusted,
    ...(opts.health ? { health: opts.health } : {}),
  });
  return { orchestrator, journal, rel, calls, container, model, fetcher, dataDir };
}

async function readReceipt(file: string, rel: ReturnType<typeof buildRelease>, rollouts: Record<string, string>, txId?: string) {
  const bytes = await readFile(file);
  const v = verifyReceipt(JSON.parse(bytes.toString('utf8')), { ca: parseCertificatePem(device.caPem), tenant: TENANT, device: device.name, now: new Date() });
  const r = verifyRelease(parseEnvelope(rel.envelope), { trustedKeys: [rel.publicKey], tenant: TENANT, product: PRODUCT, now: new Date() });
  checkReceiptAgainstRelease(v.payload, {
    release: r.payload,
    payloadDigest: r.payloadDigest,
    envelopeDigest: r.envelopeDigest,
    rollouts,
    ...(txId ? { transactionId: txId } : {}),
  });
  return v.payload;
}

const healthy: HealthChecker = { check: async () => ({ verdict: 'healthy', results: [{ name: 'p', ok: true, detail: 'exit 0' }] }) };

describe('orchestrator: signed release transactions', () => {
  it('two-component transaction commits: all staged before any activation, groups in order, signed receipt in the outbox', async () => {
    const s = await scenario({ groups: [['model-a'], ['app-b']], health: healthy });
    const out = await s.orchestrator.apply(assignmentFor(s.rel));
    expect(out).toMatchObject({ status: 'done', kind: 'signed', activation: 'activated', health: 'healthy' });
    expect(s.calls).toEqual([
      { op: 'stage', component: 'model-a' },
      { op: 'stage', component: 'app-b' },
      { op: 'activate', component: 'model-a' },
      { op: 'activate', component: 'app-b' },
      { op: 'commit', component: 'model-a' },
      { op: 'commit', component: 'app-b' },
    ]);
    if (out.status !== 'done') throw new Error('unreachable');
    const receipt = await readReceipt(out.outboxFile, s.rel, { 'model-a': 'ro-model-a', 'app-b': 'ro-app-b' }, 'tx-1');
    expect(receipt.transaction).toEqual({ id: 'tx-1', member_count: 2 });
    expect(receipt.members!.map((m) => [m.component, m.verdict, m.previous_digest])).toEqual([
      ['model-a', 'committed', null],
      ['app-b', 'committed', null],
    ]);
    expect(s.journal.get('tx-1')!.state).toBe('receipt-persisted');
    await s.orchestrator.markReported('tx-1');
    expect(s.journal.get('tx-1')!.state).toBe('reported');
    expect(await s.orchestrator.outbox.list()).toEqual([]);
  });

  it('second group fails health: both members restored in reverse order, receipt says rolled-back', async () => {
    let checks = 0;
    const health: HealthChecker = {
      check: async () =>
        ++checks === 2 ? { verdict: 'unhealthy', results: [{ name: 'web', ok: false, detail: 'status 503' }] } : { verdict: 'healthy', results: [] },
    };
    const s = await scenario({ groups: [['model-a'], ['app-b']], health });
    s.model.live.set('model-a', `sha256:${'a'.repeat(64)}`);
    const out = await s.orchestrator.apply(assignmentFor(s.rel));
    expect(out).toMatchObject({ status: 'done', activation: 'rolled-back', health: 'unhealthy' });
    expect(s.calls.filter((c) => c.op !== 'stage')).toEqual([
      { op: 'activate', component: 'model-a' },
      { op: 'activate', component: 'app-b' },
      { op: 'rollback', component: 'app-b' },
      { op: 'rollback', component: 'model-a' },
    ]);
    expect(s.model.live.get('model-a')).toBe('sha256:' + 'a'.repeat(64));
    if (out.status !== 'done') throw new Error('unreachable');
    const receipt = await readReceipt(out.outboxFile, s.rel, { 'model-a': 'ro-model-a', 'app-b': 'ro-app-b' }, 'tx-1');
    expect(receipt).toMatchObject({ activation: 'rolled-back', health: 'unhealthy' });
    expect(receipt.members!.map((m) => [m.verdict, m.resulting_digest])).toEqual([
      ['rolled-back', 'sha256:' + 'a'.repeat(64)],
      ['rolled-back', null],
    ]);
  });

  it('activation failure in group 1 restores it and group 0; later groups are not-attempted', async () => {
    const s = await scenario({ groups: [['model-a'], ['app-b'], ['app-c']], failActivate: ['app-b'] });
    const out = await s.orchestrator.apply(assignmentFor(s.rel));
    expect(s.calls.filter((c) => c.op === 'rollback').map((c) => c.component)).toEqual(['app-b', 'model-a']);
    if (out.status !== 'done') throw new Error(JSON.stringify(out));
    const receipt = await readReceipt(out.outboxFile, s.rel, { 'model-a': 'ro-model-a', 'app-b': 'ro-app-b', 'app-c': 'ro-app-c' }, 'tx-1');
    expect(receipt.activation).toBe('rolled-back');
    expect(receipt.health).toBe('not-checked');
    expect(receipt.members!.map((m) => m.verdict)).toEqual(['rolled-back', 'rolled-back', 'not-attempted']);
  });

  it('single component: top-level rollout and digests', async () => {
    const s = await scenario({ groups: [['model-a']] });
    const out = await s.orchestrator.apply(assignmentFor(s.rel));
    if (out.status !== 'done') throw new Error(JSON.stringify(out));
    const receipt = await readReceipt(out.outboxFile, s.rel, { 'model-a': 'ro-model-a' });
    expect(receipt).toMatchObject({ rollout: 'ro-model-a', activation: 'activated', health: 'not-checked', previous_digest: null });
    expect(receipt.members).toBeUndefined();
  });

  it('waits for the complete member set, then proceeds; nothing is journaled while waiting', async () => {
    const s = await scenario({ groups: [['model-a'], ['app-b']] });
    expect(await s.orchestrator.apply(assignmentFor(s.rel, 'tx-1', ['app-b']))).toEqual({ status: 'waiting', missing: ['app-b'] });
    expect(s.journal.get('tx-1')).toBeUndefined();
    expect(s.calls).toEqual([]);
    expect(await s.orchestrator.apply(assignmentFor(s.rel))).toMatchObject({ status: 'done' });
  });

  it('refuses a member set that cannot match the signed release', async () => {
    const s = await scenario({ groups: [['model-a'], ['app-b']] });
    const a = assignmentFor(s.rel);
    expect(await s.orchestrator.apply({ ...a, memberCount: 3 })).toMatchObject({ status: 'refused', code: 'MEMBER_SET_MISMATCH' });
    expect(await s.orchestrator.apply({ ...a, members: a.members.map((m) => ({ ...m, position: 1 - m.position })) })).toMatchObject({
      status: 'refused',
      code: 'MEMBER_SET_MISMATCH',
    });
    expect(s.calls).toEqual([]);
  });

  it('fails closed: untrusted signer, or no release settings at all', async () => {
    const other = await scenario({ groups: [['model-a']], trusted: 'other' });
    expect(await other.orchestrator.apply(assignmentFor(other.rel))).toMatchObject({ status: 'refused', code: 'RELEASE_REFUSED' });
    const none = await scenario({ groups: [['model-a']], trusted: 'none' });
    expect(await none.orchestrator.apply(assignmentFor(none.rel))).toMatchObject({ status: 'refused', code: 'RELEASE_SETTINGS_ABSENT' });
    expect(other.calls.concat(none.calls)).toEqual([]);
  });

  it('a fetch failure is retried in place: the download completes, its attempts journaled and reported', async () => {
    const s = await scenario({ groups: [['model-a']] });
    const fetchTarget = s.fetcher.fetchTarget.bind(s.fetcher);
    let fails = 2;
    s.fetcher.fetchTarget = async (...args) => {
      if (fails-- > 0) throw new Error('connection reset');
      return fetchTarget(...args);
    };
    expect(await s.orchestrator.apply(assignmentFor(s.rel))).toMatchObject({ status: 'done', activation: 'activated' });
    expect(s.journal.get('tx-1')!.data['delivery:model-a']).toMatchObject({ method: 'full', attempts: 3 });
    const report = JSON.parse(Buffer.from((await s.orchestrator.outbox.readDelivery('tx-1'))!).toString()) as { members: unknown[] };
    expect(report.members).toEqual([expect.objectContaining({ component: 'model-a', attempts: 3, resumes: 0 })]);
  });

  it('restarts during a download that keeps moving bytes do not trip the loop guard; restarts without progress do', async () => {
    const s = await scenario({ groups: [['model-a']] });
    const [[path, bytes]] = [...s.rel.targets.entries()] as [[string, Uint8Array]];
    // each run of the agent gets one more byte durable, then stops as a crash would (a transient failure)
    let moving = true;
    s.fetcher.fetchTarget = async (p, _e, destFile, from, progress) => {
      expect(p).toBe(path);
      if (moving && from + 1 < bytes.length) {
        await appendFile(destFile, bytes.subarray(from, from + 1));
        await progress!.checkpoint(from + 1);
        throw new AgentError('JOURNAL_WRITE_FAILED', 'disk hiccup');
      }
      await appendFile(destFile, bytes.subarray(from));
    };
    expect(await s.orchestrator.apply(assignmentFor(s.rel))).toMatchObject({ status: 'retry-later', code: 'JOURNAL_WRITE_FAILED' });
    for (let i = 0; i < 6; i++) expect(await s.orchestrator.resume()).toMatchObject([{ status: 'retry-later', code: 'JOURNAL_WRITE_FAILED' }]);
    expect(s.journal.get('tx-1')).toMatchObject({ state: 'downloading', resumptions: 0 });
    expect(s.journal.get('tx-1')!.data['download:model-a']).toMatchObject({ offset: 7 });
    moving = false;
    expect(await s.orchestrator.resume()).toMatchObject([{ status: 'done', activation: 'activated' }]);

    // the same failure without progress: the fourth restart is one too many
    const t = await scenario({ groups: [['model-a']] });
    t.fetcher.fetchTarget = async () => {
      throw new AgentError('JOURNAL_WRITE_FAILED', 'disk hiccup');
    };
    expect(await t.orchestrator.apply(assignmentFor(t.rel))).toMatchObject({ status: 'retry-later' });
    for (let i = 0; i < 3; i++) expect(await t.orchestrator.resume()).toMatchObject([{ status: 'retry-later' }]);
    expect(await t.orchestrator.resume()).toMatchObject([{ status: 'done', activation: 'failed' }]);
    expect(t.journal.get('tx-1')!.data.failure).toMatchObject({ code: 'LOOP_GUARD' });
  });

  it('a link that stays down fails the transaction after the bound: DOWNLOAD_RETRIES_EXHAUSTED, named in the delivery report', async () => {
    const s = await scenario({ groups: [['model-a']] });
    (s.fetcher.opts as { failWith?: Error }).failWith = new Error('connection reset');
    const out = await s.orchestrator.apply(assignmentFor(s.rel));
    expect(out).toMatchObject({ status: 'done', activation: 'failed' });
    expect(s.fetcher.calls).toHaveLength(DOWNLOAD.defaultAttempts);
    expect(s.journal.get('tx-1')!.data.failure).toMatchObject({ code: 'DOWNLOAD_RETRIES_EXHAUSTED', component: 'model-a' });
    expect(s.calls).toEqual([]);
    const report = JSON.parse(Buffer.from((await s.orchestrator.outbox.readDelivery('tx-1'))!).toString()) as { members: Record<string, unknown>[] };
    expect(report.members).toEqual([
      expect.objectContaining({
        component: 'model-a',
        method: 'full',
        bytes_transferred: 0,
        attempts: DOWNLOAD.defaultAttempts,
        failure: 'DOWNLOAD_RETRIES_EXHAUSTED',
        failure_detail: expect.stringContaining(`${DOWNLOAD.defaultAttempts} attempts in a row without progress`),
      }),
    ]);
  });

  it('a target whose bytes do not match the signed digest fails without activating anything', async () => {
    const s = await scenario({ groups: [['model-a'], ['app-b']] });
    const [path] = [...s.rel.targets.keys()];
    s.rel.targets.set(path!, new TextEncoder().encode('tampered'));
    const out = await s.orchestrator.apply(assignmentFor(s.rel));
    expect(out).toMatchObject({ status: 'done', activation: 'failed' });
    expect(s.calls).toEqual([]);
    if (out.status !== 'done') throw new Error('unreachable');
    const receipt = await readReceipt(out.outboxFile, s.rel, { 'model-a': 'ro-model-a', 'app-b': 'ro-app-b' }, 'tx-1');
    expect(receipt.members!.map((m) => m.verdict)).toEqual(['failed', 'not-attempted']);
  });

  it('runs the release own health probes for real (default checker): a failing command rolls back', async () => {
    const dataDir = join(root.dir, 'real-probes');
    const calls: DriverCall[] = [];
    const model = new FakeMemberDriver('model', calls);
    const rel = buildRelease({
      components: [{ name: 'model-a', kind: 'model', content: 'v2' }],
      probes: [
        { name: 'ok', type: 'command', command: ['sh', '-c', 'exit 0'], timeout_s: 5 },
        { name: 'broken', type: 'command', command: ['sh', '-c', 'exit 1'], timeout_s: 5 },
      ],
    });
    const { orchestrator } = await makeOrchestrator({
      dataDir,
      device,
      drivers: { model },
      fetcher: new MemoryFetcher(rel.targets),
      trustedKeys: [rel.publicKey],
    });
    const out = await orchestrator.apply(assignmentFor(rel));
    expect(out).toMatchObject({ status: 'done', activation: 'rolled-back', health: 'unhealthy' });
    expect(calls.map((c) => c.op)).toEqual(['stage', 'activate', 'rollback']);
  });
});
