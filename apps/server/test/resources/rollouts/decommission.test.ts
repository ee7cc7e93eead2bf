/**
 * Decommissioned devices and rollouts: a decommissioned device never reports (the device channel
 * refuses it), so a rollout leaves it out when it starts, and decommissioning a device that is
 * still pending in a running rollout settles it as `skipped`, letting its wave and the rollout
 * complete. Receipts and legacy reports go through the same commands the device channel runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelopeBytes, signReceipt, type PrivateKey, type ReceiptPayload } from '@svc/release-core';
import { acceptReceipt } from '../../../src/resources/release-receipts/commands.js';
import { decommissionDevice } from '../../../src/resources/devices/commands.js';
import { reportLegacyStatus, startSignedRollout } from '../../../src/resources/rollouts/commands.js';
import { listAssignments } from '../../../src/resources/rollouts/queries.js';
import { deviceActor, runUnitOfWork, type Actor, type UnitOfWork } from '../../../src/resources/unit-of-work.js';
import { availableDrivers } from '../../helpers/store.js';
import { createReleaseFixture, deviceIdentity, newAuthorizer, releasePayload, sign, type ReleaseFixture } from '../../fixtures/release-flow.js';

describe.each(availableDrivers())('rollouts and decommissioned devices on %s', (driver) => {
  let f: ReleaseFixture;
  let tenant: string;
  let arts: any[];
  let auth: ReturnType<typeof newAuthorizer>;
  const ids: Record<string, { certDer: Uint8Array; key: PrivateKey }> = {};
  const db = () => f.t.testStore.store.db;
  let version = 0;

  beforeAll(async () => {
    f = await createReleaseFixture(driver);
    tenant = f.t.tenantId;
    arts = [
      (await f.upload({ name: 'dc-conf', version: '1.0.0', kind: 'config', bytes: 'conf' })).body,
      (await f.upload({ name: 'dc-model', version: '1.0.0', kind: 'model', bytes: 'model' })).body,
    ];
    auth = newAuthorizer();
    await f.api('POST', '/api/v1/authorizer-keys', { name: 'k', public_key_pem: auth.pem });
  });
  afterAll(async () => {
    await f?.dispose();
  });

  async function devices(names: string[]): Promise<void> {
    for (const d of names) {
      await f.device(d);
      ids[d] = await deviceIdentity(f, d);
    }
  }
  const decommission = (name: string) => f.api('DELETE', `/api/v1/devices/${name}`);

  /** A two-component signed release to a new group of `members`, published. */
  async function publish(group: string, members: string[], rollout: { waves?: unknown[]; failure_threshold?: unknown }) {
    const g = (await f.api('POST', '/api/v1/groups', { name: group, members })).body;
    const env = sign(releasePayload({ tenant, artifacts: arts, group: g, version: `1.0.${version++}`, ...rollout }), auth.key);
    const rel = (await f.api('POST', '/api/v1/releases', { envelope: env, expected_product: 'edge-gateway' })).body;
    return { rel, group: g };
  }
  /** The same, started; the start's answer. */
  async function startSigned(group: string, members: string[], rollout: { waves?: unknown[]; failure_threshold?: unknown }) {
    const { rel, group: g } = await publish(group, members, rollout);
    return { rel, group: g, start: await f.api('POST', '/api/v1/rollouts', { release_id: rel.id }) };
  }
  /** A unit of work as an operator that stays open, before COMMIT, until `release()` is called. */
  function heldOpen<T>(fn: (uow: UnitOfWork) => Promise<T>) {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const atCommit = new Promise<void>((resolve) => (reached = resolve));
    const operator: Actor = { name: 'ops@example.com', credential: 'session', requestId: null };
    const done = runUnitOfWork(db(), { tenant, actor: operator, now: f.t.clock.now(), hooks: { beforeCommit: () => (reached(), gate) } }, fn);
    return { atCommit, release, done };
  }
  /** Whether `p` is still unsettled after `ms`. */
  const stillWaiting = (p: Promise<unknown>, ms = 300) =>
    Promise.race([
      p.then(
        () => false,
        () => false,
      ),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(true), ms)),
    ]);

  function receiptBytes(device: string, rel: any, start: any): Uint8Array {
    const payload: ReceiptPayload = {
      tenant,
      device: { name: device, certificate: Buffer.from(ids[device]!.certDer).toString('base64') },
      release: { product: rel.product, version: rel.version, payload_digest: rel.payload_digest, envelope_digest: rel.envelope_digest },
      activation: 'activated',
      health: 'healthy',
      timestamp: '2026-06-01T00:00:00Z',
      transaction: { id: start.transaction_id, member_count: 2 },
      members: start.rollouts.map((m: any) => {
        const digest = arts.find((a) => a.name === m.component).digest;
        return {
          group: m.group,
          position: m.position,
          component: m.component,
          rollout: m.rollout_id,
          candidate_digest: digest,
          previous_digest: null,
          resulting_digest: digest,
          verdict: 'committed',
        };
      }),
    } as unknown as ReceiptPayload;
    return envelopeBytes(signReceipt(payload, ids[device]!.key));
  }
  // as the device channel runs it: one unit of work as the device
  const asDevice = <T>(device: string, fn: (uow: UnitOfWork) => Promise<T>) =>
    runUnitOfWork(db(), { tenant, actor: deviceActor(device), now: f.t.clock.now() }, fn);
  const upload = (device: string, rel: any, start: any) =>
    asDevice(device, (uow) =>
      acceptReceipt(uow, { deviceName: device, connectionCertificateDer: ids[device]!.certDer, envelopeBytes: receiptBytes(device, rel, start) }),
    );
  const legacyReport = (device: string, rolloutId: string) =>
    asDevice(device, (uow) => reportLegacyStatus(uow, { deviceName: device, rolloutId, status: 'installed' }));
  const detail = async (id: string) => (await f.api('GET', `/api/v1/rollouts/${id}`)).body;
  const auditRows = (action: string) => db().selectFrom('audit_events').selectAll().where('tenant_id', '=', tenant).where('action', '=', action).execute();
  const assigned = async (device: string, transactionId: string) =>
    (await listAssignments(db(), tenant, device, new Date())).some((a) => a.transaction?.id === transactionId);

  it('a device decommissioned before the start is left out: the rollout completes when the others report', async () => {
    const members = ['st-1', 'st-2', 'st-3', 'st-4'];
    await devices(members);
    expect((await decommission('st-4')).status).toBe(204);
    const { rel, start } = await startSigned('start', members, { waves: [{ name: 'canary', count: 1 }], failure_threshold: { count: 0 } });
    expect(start.status).toBe(201);
    const s = start.body;
    const d0 = await detail(s.id);
    expect(d0.device_count).toBe(3);
    expect(d0.devices_total).toBe(3);
    expect(d0.devices.map((d: any) => d.device).sort()).toEqual(['st-1', 'st-2', 'st-3']);
    expect(d0.waves.map((w: any) => [w.name, w.size])).toEqual([
      ['canary', 1],
      ['rest', 2],
    ]);
    expect(d0.progress).toEqual({ pending: 3, committed: 0, rolled_back: 0, failed: 0, installed: 0, skipped: 0 });
    const startAudit = (await auditRows('rollout.start')).find((a) => a.target === `rollout:${s.id}`)!;
    expect(startAudit.detail).toMatchObject({ devices: 3, decommissioned: 1 });

    // re-enrolled after the start, it is still no member
    await f.device('st-4');
    expect(await assigned('st-4', s.transaction_id)).toBe(false);
    await expect(upload('st-4', rel, s)).rejects.toThrow(/st-4 is not assigned/);

    const canary = d0.devices.find((d: any) => d.wave === 0).device as string;
    await upload(canary, rel, s);
    for (const d of ['st-1', 'st-2', 'st-3'].filter((x) => x !== canary)) await upload(d, rel, s);
    const d1 = await detail(s.id);
    expect(d1.status).toBe('completed');
    expect(d1.waves.map((w: any) => w.state)).toEqual(['done', 'done']);
    expect(d1.progress).toEqual({ pending: 0, committed: 3, rolled_back: 0, failed: 0, installed: 0, skipped: 0 });
    const t = (await f.api('GET', `/api/v1/release-transactions/${s.transaction_id}`)).body;
    expect(t).toMatchObject({ state: 'committed', devices: { total: 3, pending: 0, committed: 3, skipped: 0 } });
  });

  it('a device with an unsupported profile that is decommissioned does not hold the start back', async () => {
    await devices(['pf-1']);
    await f.device('pf-2', 'linux-riscv64');
    await decommission('pf-2');
    const { start } = await startSigned('profiles', ['pf-1', 'pf-2'], {});
    expect(start.status).toBe(201);
    expect(start.body.device_count).toBe(1);
  });

  it('a group of decommissioned devices only: the start is refused naming the field, signed and legacy', async () => {
    await devices(['gone-1', 'gone-2']);
    await decommission('gone-1');
    await decommission('gone-2');
    const { group, start } = await startSigned('gone', ['gone-1', 'gone-2'], {});
    expect(start.status).toBe(400);
    expect(start.body.error).toBe(`rollout.target_group: group ${group.id} has no devices in service (all 2 members are decommissioned)`);
    const legacy = await f.api('POST', '/api/v1/rollouts', { artifact_id: arts[0].id, group_id: group.id });
    expect(legacy.status).toBe(400);
    expect(legacy.body.error).toBe(`group_id: group ${group.id} has no devices in service (all 2 members are decommissioned)`);
    expect((await auditRows('rollout.start')).some((a) => (a.detail as any).group_id === group.id)).toBe(false);
  });

  it('devices decommissioned mid-rollout while pending are skipped in every member rollout; the waves and the rollout complete', async () => {
    const members = ['mr-1', 'mr-2', 'mr-3', 'mr-4'];
    await devices(members);
    // no failure allowed: a skipped device must not count as one
    const { rel, start } = await startSigned('mid', members, { waves: [{ name: 'first', count: 2 }], failure_threshold: { count: 0 } });
    expect(start.status).toBe(201);
    const s = start.body;
    expect(s.rollouts).toHaveLength(2);
    const d0 = await detail(s.id);
    const [a, b] = d0.devices.filter((d: any) => d.wave === 0).map((d: any) => d.device as string);
    const [c, e] = d0.devices.filter((d: any) => d.wave === 1).map((d: any) => d.device as string);
    await upload(a, rel, s);
    expect((await detail(s.id)).waves.map((w: any) => [w.state, w.done])).toEqual([
      ['open', 1],
      ['pending', 0],
    ]);

    // b is pending in the open wave, c in the wave not yet open
    expect((await decommission(b)).status).toBe(204);
    const d1 = await detail(s.id);
    expect(d1.waves.map((w: any) => [w.state, w.done, w.failed])).toEqual([
      ['done', 2, 0],
      ['open', 0, 0],
    ]);
    expect(d1.status).toBe('running');
    expect(d1.devices.find((d: any) => d.device === b).state).toBe('skipped');
    expect((await decommission(c)).status).toBe(204);
    expect((await detail(s.id)).waves.map((w: any) => [w.state, w.done])).toEqual([
      ['done', 2],
      ['open', 1],
    ]);
    // every member rollout shows the same deployment
    for (const m of s.rollouts) {
      expect((await detail(m.rollout_id)).progress).toEqual({ pending: 1, committed: 1, rolled_back: 0, failed: 0, installed: 0, skipped: 2 });
    }

    // each skip has its audit row beside the decommission (same actor), naming every member rollout
    const decommissions = await auditRows('device.decommission');
    const skips = (await auditRows('rollout.device-skip')).filter((x) => (x.detail as any).transaction_id === s.transaction_id);
    expect(skips).toHaveLength(2);
    for (const [device, wave] of [
      [b!, 0],
      [c!, 1],
    ] as const) {
      const skip = skips.find((x) => (x.detail as any).device === device)!;
      const dec = decommissions.find((x) => x.target === `device:${device}`)!;
      expect(skip.target).toBe(`rollout:${s.id}`);
      expect(skip.actor).toBe(dec.actor);
      expect(skip.detail).toEqual({
        device,
        reason: 'decommissioned',
        wave,
        transaction_id: s.transaction_id,
        rollouts: s.rollouts.map((m: any) => m.rollout_id),
      });
    }

    // the last device reports: the rollout completes, and the transaction commits on the devices in service
    await upload(e, rel, s);
    const d2 = await detail(s.id);
    expect(d2.status).toBe('completed');
    expect(d2.progress).toEqual({ pending: 0, committed: 2, rolled_back: 0, failed: 0, installed: 0, skipped: 2 });
    const t = (await f.api('GET', `/api/v1/release-transactions/${s.transaction_id}`)).body;
    expect(t).toMatchObject({ state: 'committed', devices: { total: 4, pending: 0, committed: 2, rolled_back: 0, failed: 0, skipped: 2 } });
    const counts = (await f.api('GET', '/api/v1/release-transactions')).body.counts;
    // derived in SQL: committed are the first test's transaction and this one; the profile test's still runs
    expect(counts).toEqual({ running: 1, committed: 2, 'rolled back': 0, failed: 0 });

    // a receipt of a skipped device is refused, and re-enrolling it brings no row back
    await expect(upload(b, rel, s)).rejects.toThrow(`device: ${b} was decommissioned while it was pending in this deployment (skipped)`);
    await f.device(b);
    expect((await f.api('GET', `/api/v1/devices/${b}`)).body.status).toBe('online');
    expect(await assigned(b, s.transaction_id)).toBe(false);
    await expect(upload(b, rel, s)).rejects.toThrow(/skipped/);
    expect((await detail(s.id)).progress).toEqual(d2.progress);
    // decommissioning again settles nothing twice
    expect((await decommission(b)).status).toBe(204);
    expect((await detail(s.id)).progress).toEqual(d2.progress);
  });

  it('a legacy rollout completes when a pending member is decommissioned; its report afterwards is refused', async () => {
    await devices(['lg-1', 'lg-2']);
    const group = (await f.api('POST', '/api/v1/groups', { name: 'legacy', members: ['lg-1', 'lg-2'] })).body;
    const lg = (await f.api('POST', '/api/v1/rollouts', { artifact_id: arts[0].id, group_id: group.id })).body;
    await legacyReport('lg-1', lg.id);
    expect((await detail(lg.id)).status).toBe('running');
    await decommission('lg-2');
    const d = await detail(lg.id);
    expect(d.status).toBe('completed');
    expect(d.progress).toEqual({ pending: 0, committed: 0, rolled_back: 0, failed: 0, installed: 1, skipped: 1 });
    const skip = (await auditRows('rollout.device-skip')).find((x) => x.target === `rollout:${lg.id}`)!;
    expect(skip.detail).toEqual({ device: 'lg-2', reason: 'decommissioned', wave: 0, transaction_id: null, rollouts: [lg.id] });
    await f.device('lg-2');
    await expect(legacyReport('lg-2', lg.id)).rejects.toThrow(`device: lg-2 was decommissioned while it was pending in rollout ${lg.id} (skipped)`);
    expect((await detail(lg.id)).progress).toEqual(d.progress);
  });
  // two transactions at once: PGlite runs one connection, so only PostgreSQL can interleave them
  it.runIf(driver === 'postgres')('a decommission during a start waits for it, then skips the device in the new rollout', async () => {
    const members = ['cs-1', 'cs-2'];
    await devices(members);
    const { rel } = await publish('concurrent-start', members, {});
    const start = heldOpen((uow) => startSignedRollout(uow, { releaseId: rel.id }));
    await start.atCommit;
    const dec = decommission('cs-2');
    expect(await stillWaiting(dec)).toBe(true);
    start.release();
    const s = await start.done;
    expect((await dec).status).toBe(204);
    const d = await detail(s.rollout_ids[0]!);
    expect(d.device_count).toBe(2);
    expect(d.devices.map((x: any) => [x.device, x.state])).toEqual([
      ['cs-1', 'pending'],
      ['cs-2', 'skipped'],
    ]);
    expect(d.progress).toMatchObject({ pending: 1, skipped: 1 });
  });

  it.runIf(driver === 'postgres')('a start during a decommission waits for it, then leaves the device out', async () => {
    const members = ['cd-1', 'cd-2'];
    await devices(members);
    const { rel } = await publish('concurrent-decommission', members, {});
    const dec = heldOpen((uow) => decommissionDevice(uow, { name: 'cd-2' }));
    await dec.atCommit;
    const start = f.api('POST', '/api/v1/rollouts', { release_id: rel.id });
    expect(await stillWaiting(start)).toBe(true);
    dec.release();
    await dec.done;
    const s = await start;
    expect(s.status).toBe(201);
    const d = await detail(s.body.id);
    expect(d.device_count).toBe(1);
    expect(d.devices.map((x: any) => x.device)).toEqual(['cd-1']);
  });
});
