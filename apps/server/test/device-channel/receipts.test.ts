import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { parsePrivateKeyPem, signReceipt, envelopeBytes, type ReceiptPayload } from '@svc/release-core';
import { AssignmentKind, LegacyStatus, type CheckInResponse, type UploadReceiptResponse } from '@svc/device-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLegacyRollout } from '../../src/resources/rollouts/commands.js';
import { runUnitOfWork, systemActor } from '../../src/resources/unit-of-work.js';
import { availableDrivers } from '../helpers/store.js';
import {
  enrollDevice,
  publishSignedRollout,
  refusal,
  startChannelFixture,
  unary,
  type ChannelFixture,
  type EnrolledDevice,
} from '../fixtures/device-channel.js';

interface Dev {
  name: string;
  keyPem: string;
  certDer: Uint8Array;
  clients: EnrolledDevice['clients'];
}

describe.each(availableDrivers())('device channel: assignments, receipts, repository on %s', (driver) => {
  let f: ChannelFixture;
  let a: Dev;
  let b: Dev;
  let release: { id: string; product: string; version: string; payload_digest: string; envelope_digest: string; target: string };
  let rolloutId = '';
  let deploymentId = '';
  const payloadBytes = Buffer.from('config-bytes-v1\n');
  const digest = `sha256:${createHash('sha256').update(payloadBytes).digest('hex')}` as const;

  async function enrolled(name: string): Promise<Dev> {
    const d = await enrollDevice(f, name);
    return { name, keyPem: d.key.keyPem, certDer: d.certDer, clients: d.clients };
  }

  // fault injection: when set, runs after a unit of work's audit row, before COMMIT
  let afterAudit: ((action: string) => void) | undefined;

  beforeAll(async () => {
    f = await startChannelFixture(driver, { hooks: { unitOfWork: { afterAudit: (e) => afterAudit?.(e.action) } } });
    a = await enrolled('dev-a');
    b = await enrolled('dev-b');
    const pub = await publishSignedRollout(f, { devices: ['dev-a', 'dev-b'], bytes: payloadBytes, placementPath: '/etc/edge/edge.conf' });
    release = pub;
    rolloutId = pub.rolloutId;
    deploymentId = pub.deploymentId;
  });

  afterAll(async () => {
    a?.clients.close();
    b?.clients.close();
    await f?.dispose();
  });

  function receiptFor(dev: Dev, over: Partial<ReceiptPayload> = {}): Uint8Array {
    const payload: ReceiptPayload = {
      tenant: f.tenantId,
      device: { name: dev.name, certificate: Buffer.from(dev.certDer).toString('base64') },
      release: {
        product: release.product,
        version: release.version,
        payload_digest: release.payload_digest,
        envelope_digest: release.envelope_digest,
      } as never,
      rollout: rolloutId,
      candidate_digest: digest,
      previous_digest: null,
      resulting_digest: digest,
      activation: 'activated',
      health: 'healthy',
      timestamp: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
      ...over,
    };
    return envelopeBytes(signReceipt(payload, parsePrivateKeyPem(dev.keyPem)));
  }

  it('check-in returns the signed assignment with its transaction member set', async () => {
    const res = await unary<CheckInResponse>((cb) =>
      a.clients.device.checkIn({ inventory: { agentVersion: '1', profile: 'linux-arm64', product: 'edge', slots: [], attributes: undefined } }, cb),
    );
    expect(res.assignments).toHaveLength(1);
    const asg = res.assignments[0]!;
    expect(asg.kind).toBe(AssignmentKind.ASSIGNMENT_KIND_SIGNED);
    expect(asg.rolloutId).toBe(rolloutId);
    expect(asg.release?.envelopeTarget).toBe(release.target);
    expect(asg.release?.envelopeDigest).toBe(release.envelope_digest);
    expect(asg.transaction).toEqual({ id: deploymentId, memberCount: 1, members: [{ rolloutId, component: 'edge-conf', group: 0, position: 0 }] });
  });

  it("refuses a receipt signed by device A uploaded over device B's connection; nothing stored", async () => {
    const r = await refusal(unary((cb) => b.clients.device.uploadReceipt({ envelope: Buffer.from(receiptFor(a)) }, cb)));
    expect([status.PERMISSION_DENIED, status.UNAUTHENTICATED, status.FAILED_PRECONDITION, status.INVALID_ARGUMENT]).toContain(r.code);
    expect(r.svcCode).toMatch(/^CERT_|^RECEIPT_/);
    const n = await f.t.store.db
      .selectFrom('release_receipts' as never)
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirst();
    expect(Number((n as { n: unknown }).n)).toBe(0);
  });

  it('accepts the receipt over its own connection; identical bytes again are a duplicate', async () => {
    const bytes = Buffer.from(receiptFor(a));
    const first = await unary<UploadReceiptResponse>((cb) => a.clients.device.uploadReceipt({ envelope: bytes }, cb));
    expect(first.duplicate).toBe(false);
    expect(first.receiptId).toMatch(/^[0-9a-f-]{36}$/);
    const again = await unary<UploadReceiptResponse>((cb) => a.clients.device.uploadReceipt({ envelope: bytes }, cb));
    expect(again).toEqual({ receiptId: first.receiptId, duplicate: true });
    // the device's work is done: no assignment on the next check-in
    const res = await unary<CheckInResponse>((cb) => a.clients.device.checkIn({ inventory: undefined }, cb));
    expect(res.assignments).toEqual([]);
  });

  it('refuses garbage and empty receipt envelopes with the field named', async () => {
    const bad = await refusal(unary((cb) => b.clients.device.uploadReceipt({ envelope: Buffer.from('{"nope":1}') }, cb)));
    expect(bad.code).toBe(status.INVALID_ARGUMENT);
    const empty = await refusal(unary((cb) => b.clients.device.uploadReceipt({ envelope: Buffer.alloc(0) }, cb)));
    expect(empty.details).toBe('envelope: missing');
  });

  it('a receipt, the device state it moves and its audit row commit together: a failure after the audit row leaves none of them', async () => {
    const db = f.t.store.db;
    const state = async () => {
      const receipts = await db.selectFrom('release_receipts').select('id').where('device_name', '=', b.name).execute();
      const audits = await db
        .selectFrom('audit_events')
        .select('id')
        .where('action', '=', 'release-receipt.accept')
        .where('actor', '=', `device:${b.name}`)
        .execute();
      const device = await db
        .selectFrom('deployment_devices')
        .select('state')
        .where('deployment_id', '=', deploymentId)
        .where('device_name', '=', b.name)
        .executeTakeFirstOrThrow();
      return { receipts: receipts.length, audits: audits.length, state: device.state };
    };
    const bytes = Buffer.from(receiptFor(b));
    let reached = 0;
    afterAudit = (action) => {
      if (action !== 'release-receipt.accept') return;
      reached += 1;
      throw new Error('injected failure after the audit row, before COMMIT');
    };
    try {
      const r = await refusal(unary((cb) => b.clients.device.uploadReceipt({ envelope: bytes }, cb)));
      expect(r.code).toBe(status.INTERNAL);
    } finally {
      afterAudit = undefined;
    }
    // the audit row was written, then the failure rolled back the receipt and the device state with it
    expect(reached).toBe(1);
    expect(await state()).toEqual({ receipts: 0, audits: 0, state: 'pending' });
    const res = await unary<CheckInResponse>((cb) => b.clients.device.checkIn({ inventory: undefined }, cb));
    expect(res.assignments.map((x) => x.rolloutId)).toEqual([rolloutId]);

    const ok = await unary<UploadReceiptResponse>((cb) => b.clients.device.uploadReceipt({ envelope: bytes }, cb));
    expect(ok.duplicate).toBe(false);
    expect(await state()).toEqual({ receipts: 1, audits: 1, state: 'committed' });
  });

  it('a legacy status report over gRPC, the device progress it moves and its audit row commit together', async () => {
    const db = f.t.store.db;
    // a legacy rollout of the published artifact to the same group
    const artifact = await db.selectFrom('artifacts').select('id').where('tenant_id', '=', f.tenantId).executeTakeFirstOrThrow();
    const group = await db.selectFrom('device_groups').select('id').where('tenant_id', '=', f.tenantId).executeTakeFirstOrThrow();
    const legacy = await runUnitOfWork(db, { tenant: f.tenantId, actor: systemActor('test'), now: new Date() }, (uow) =>
      startLegacyRollout(uow, { artifactId: artifact.id, groupId: group.id }),
    );
    const rollout = legacy.rollout_ids[0]!;
    const state = async () => {
      const reports = await db.selectFrom('legacy_status_reports').select('id').where('rollout_id', '=', rollout).execute();
      const audits = await db
        .selectFrom('audit_events')
        .select('id')
        .where('action', '=', 'rollout.legacy-status')
        .where('target', '=', `rollout:${rollout}`)
        .execute();
      const device = await db
        .selectFrom('deployment_devices')
        .select('state')
        .where('deployment_id', '=', legacy.deployment_id)
        .where('device_name', '=', b.name)
        .executeTakeFirstOrThrow();
      return { reports: reports.length, audits: audits.length, state: device.state };
    };
    const report = (detail = '') =>
      unary((cb) => b.clients.device.reportLegacyStatus({ rolloutId: rollout, status: LegacyStatus.LEGACY_STATUS_INSTALLED, detail }, cb));

    const long = await refusal(report('x'.repeat(1025)));
    expect([long.code, long.details]).toEqual([status.INVALID_ARGUMENT, 'detail: longer than 1024 characters']);
    afterAudit = (action) => {
      if (action === 'rollout.legacy-status') throw new Error('injected failure after the audit row, before COMMIT');
    };
    try {
      expect((await refusal(report())).code).toBe(status.INTERNAL);
    } finally {
      afterAudit = undefined;
    }
    expect(await state()).toEqual({ reports: 0, audits: 0, state: 'pending' });
    await report('x'.repeat(1024));
    expect(await state()).toEqual({ reports: 1, audits: 1, state: 'installed' });
  });

  it('serves TUF metadata and the release envelope target through GetFile; refuses traversal; ranges', async () => {
    const read = (path: string, offset = 0, length = 0) =>
      new Promise<{ data: Buffer; total: number }>((resolve, reject) => {
        const parts: Buffer[] = [];
        let total = -1;
        const s = a.clients.repository.getFile({ path, offset, length });
        s.on('data', (m: { data: Buffer; totalLength: number }) => {
          if (total < 0) total = m.totalLength;
          parts.push(m.data);
        });
        s.on('error', reject);
        s.on('end', () => resolve({ data: Buffer.concat(parts), total }));
      });
    const ts = await read('metadata/timestamp.json');
    expect(JSON.parse(ts.data.toString()).signed._type).toBe('timestamp');
    const sha = release.envelope_digest.slice('sha256:'.length);
    const slash = release.target.lastIndexOf('/');
    const hashed = `targets/${release.target.slice(0, slash + 1)}${sha}.${release.target.slice(slash + 1)}`;
    const env = await read(hashed);
    expect(`sha256:${createHash('sha256').update(env.data).digest('hex')}`).toBe(release.envelope_digest);
    const part = await read(hashed, 5, 10);
    expect(part.data.equals(env.data.subarray(5, 15))).toBe(true);
    expect(part.total).toBe(env.data.length);
    const trav = await refusal(read('targets/../metadata/root.json'));
    expect(trav.code).toBe(status.INVALID_ARGUMENT);
    expect(trav.details).toMatch(/^path: /);
    const missing = await refusal(read('metadata/99.root.json'));
    expect(missing.code).toBe(status.NOT_FOUND);
  });
});
