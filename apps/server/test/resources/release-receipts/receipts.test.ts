import { createHash } from 'node:crypto';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import {
  canonicalize,
  envelopeBytes,
  envelopeDigest,
  signEnvelope,
  signReceipt,
  RECEIPT_PAYLOAD_TYPE,
  type PrivateKey,
  type ReceiptPayload,
} from '@svc/release-core';
import { createCa } from '../../../src/device-channel/pki.js';
import { acceptReceipt } from '../../../src/resources/release-receipts/commands.js';
import { reportLegacyStatus } from '../../../src/resources/rollouts/commands.js';
import { listAssignments } from '../../../src/resources/rollouts/queries.js';
import { deviceActor, runUnitOfWork, type UnitOfWork } from '../../../src/resources/unit-of-work.js';
import { availableDrivers } from '../../helpers/store.js';
import { createReleaseFixture, deviceIdentity, newAuthorizer, releasePayload, sign, untar, type ReleaseFixture } from '../../fixtures/release-flow.js';

const DEVICES = ['rx-1', 'rx-2', 'rx-3'];

describe.each(availableDrivers())('receipts, waves and evidence on %s', (driver) => {
  let f: ReleaseFixture;
  let tenant: string;
  let ids: Record<string, { certDer: Uint8Array; key: PrivateKey }>;
  let arts: any[];
  let rel: any;
  let start: any;
  const db = () => f.t.testStore.store.db;

  beforeAll(async () => {
    f = await createReleaseFixture(driver);
    tenant = f.t.tenantId;
    ids = {};
    for (const d of DEVICES) {
      await f.device(d);
      ids[d] = await deviceIdentity(f, d);
    }
    arts = [
      (await f.upload({ name: 'rx-conf', version: '1.0.0', kind: 'config', bytes: 'conf' })).body,
      (await f.upload({ name: 'rx-model', version: '1.0.0', kind: 'model', bytes: 'model' })).body,
    ];
    const group = (await f.api('POST', '/api/v1/groups', { name: 'rx', members: DEVICES })).body;
    const auth = newAuthorizer();
    await f.api('POST', '/api/v1/authorizer-keys', { name: 'k', public_key_pem: auth.pem });
    const env = sign(
      releasePayload({
        tenant,
        artifacts: arts,
        group,
        waves: [
          { name: 'canary', count: 1 },
          { count: 3, requires_approval: true },
        ],
        failure_threshold: { count: 0 },
      }),
      auth.key,
    );
    rel = (await f.api('POST', '/api/v1/releases', { envelope: env, expected_product: 'edge-gateway' })).body;
    start = (await f.api('POST', '/api/v1/rollouts', { release_id: rel.id })).body;
    expect(start.kind).toBe('signed');
  });
  afterAll(async () => {
    await f?.dispose();
  });

  function receipt(device: string, over: Partial<ReceiptPayload> = {}, verdict: 'committed' | 'rolled-back' = 'committed'): ReceiptPayload {
    const members = start.rollouts.map((m: any) => ({
      group: m.group,
      position: m.position,
      component: m.component,
      rollout: m.rollout_id,
      candidate_digest: arts.find((a) => a.name === m.component).digest,
      previous_digest: null,
      resulting_digest: verdict === 'committed' ? arts.find((a) => a.name === m.component).digest : null,
      verdict,
    }));
    return {
      tenant,
      device: { name: device, certificate: Buffer.from(ids[device]!.certDer).toString('base64') },
      release: { product: rel.product, version: rel.version, payload_digest: rel.payload_digest, envelope_digest: rel.envelope_digest },
      activation: verdict === 'committed' ? 'activated' : 'rolled-back',
      health: verdict === 'committed' ? 'healthy' : 'unhealthy',
      timestamp: '2026-06-01T00:00:00Z',
      transaction: { id: start.transaction_id, member_count: 2 },
      members,
      ...over,
    };
  }
  const bytesOf = (device: string, p: ReceiptPayload) => envelopeBytes(signReceipt(p, ids[device]!.key));
  // signs without the client-side schema check, as a misbehaving device could
  const rawBytesOf = (device: string, p: unknown) => envelopeBytes(signEnvelope(RECEIPT_PAYLOAD_TYPE, canonicalize(p), ids[device]!.key));
  // as the device channel runs it: one unit of work as the device
  const asDevice = <T>(device: string, fn: (uow: UnitOfWork) => Promise<T>) =>
    runUnitOfWork(db(), { tenant, actor: deviceActor(device), now: f.t.clock.now() }, fn);
  const upload = (device: string, bytes: Uint8Array, conn = device) =>
    asDevice(device, (uow) => acceptReceipt(uow, { deviceName: device, connectionCertificateDer: ids[conn]!.certDer, envelopeBytes: bytes }));
  const legacyReport = (device: string, rolloutId: string, status: 'installed' | 'failed') =>
    asDevice(device, (uow) => reportLegacyStatus(uow, { deviceName: device, rolloutId, status }));
  const stored = async () => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM release_receipts`.execute(db())).rows[0]!.n);
  const detail = async () => (await f.api('GET', `/api/v1/rollouts/${start.id}`)).body;

  it('waves: only the canary is assigned; its committed receipt completes the wave and the next waits for approval', async () => {
    const d0 = await detail();
    expect(d0.waves.map((w: any) => [w.name, w.size, w.state])).toEqual([
      ['canary', 1, 'open'],
      ['wave-2', 2, 'pending'],
    ]);
    const canary = d0.devices.find((d: any) => d.wave === 0).device as string;
    const others = DEVICES.filter((d) => d !== canary);
    expect((await listAssignments(db(), tenant, canary, new Date())).map((a) => a.transaction?.id)).toEqual([start.transaction_id]);
    expect(await listAssignments(db(), tenant, others[0]!, new Date())).toEqual([]);

    const bytes = bytesOf(canary, receipt(canary));
    const r = await upload(canary, bytes);
    expect(r.duplicate).toBe(false);
    expect(await upload(canary, bytes)).toEqual({ receipt_id: r.receipt_id, duplicate: true });
    expect(await stored()).toBe(1);
    const audited = await sql<{
      actor: string;
      credential: string;
    }>`SELECT actor, credential FROM audit_events WHERE action = 'release-receipt.accept'`.execute(db());
    expect(audited.rows).toEqual([{ actor: `device:${canary}`, credential: 'device' }]);
    const d1 = await detail();
    expect(d1.status).toBe('awaiting_approval');
    expect(d1.waves.map((w: any) => w.state)).toEqual(['done', 'awaiting_approval']);
    expect(d1.progress).toMatchObject({ committed: 1, pending: 2 });
    expect(await listAssignments(db(), tenant, canary, new Date())).toEqual([]);
    expect((await f.api('POST', `/api/v1/rollouts/${start.id}/resume`)).status).toBe(409);
    const ap = await f.api('POST', `/api/v1/rollouts/${start.rollouts[1].rollout_id}/approve`);
    expect(ap.status).toBe(200);
    expect(ap.body.status).toBe('running');
    expect((await listAssignments(db(), tenant, others[0]!, new Date()))[0]?.transaction?.members).toHaveLength(2);
  });

  it('refuses foreign certificates, swapped, missing or tampered members and replays, storing nothing', async () => {
    const dev = (await detail()).devices.find((d: any) => d.state === 'pending').device as string;
    const other = DEVICES.find((d) => d !== dev)!;
    const good = receipt(dev);
    const [m0, m1] = [good.members![0]!, good.members![1]!];
    // members swapped between the ordered positions (positions themselves stay in order)
    const swapped = {
      ...good,
      members: [
        { ...m1, group: m0.group, position: 0 },
        { ...m0, group: m1.group, position: 1 },
      ],
    };
    const missing = { ...good, members: [good.members![0]!] };
    const tampered = {
      ...good,
      members: [{ ...good.members![0]!, candidate_digest: `sha256:${'0'.repeat(64)}`, resulting_digest: `sha256:${'0'.repeat(64)}` }, good.members![1]!],
    };
    // a second deployment of the same release: its transaction id with the first one's members
    const second = (await f.api('POST', '/api/v1/rollouts', { release_id: rel.id })).body;
    const replay = { ...good, transaction: { id: second.transaction_id, member_count: 2 } };
    const before = await stored();
    const cases: [string, () => Promise<unknown>, RegExp][] = [
      ['foreign certificate (connection is another device)', () => upload(dev, bytesOf(dev, good), other), /certificate/i],
      ['swapped member', () => upload(dev, rawBytesOf(dev, swapped)), /members\[0\]/],
      ['members out of order', () => upload(dev, rawBytesOf(dev, { ...good, members: [m1, m0] })), /members\[0\]\.position/],
      ['missing member', () => upload(dev, rawBytesOf(dev, missing)), /member/],
      ['tampered field', () => upload(dev, rawBytesOf(dev, tampered)), /members\[0\]\.candidate_digest/],
      ['replay for another rollout', () => upload(dev, bytesOf(dev, replay)), /members\[0\]\.rollout/],
      [
        'tampered bytes after signing',
        async () => {
          const env = JSON.parse(Buffer.from(bytesOf(dev, good)).toString());
          env.payload = Buffer.from(JSON.stringify({ ...good, health: 'unhealthy' })).toString('base64');
          return upload(dev, Buffer.from(JSON.stringify(env)));
        },
        /signature|canonical/i,
      ],
      ['oversized envelope', () => upload(dev, Buffer.alloc(300 * 1024, 32)), /size|large|bytes/i],
    ];
    for (const [name, run, re] of cases) {
      await expect(run(), name).rejects.toThrow(re);
    }
    expect(await stored()).toBe(before);
    const dd = await f.api('GET', `/api/v1/rollouts/${start.id}`);
    expect(dd.body.devices.find((d: any) => d.device === dev).state).toBe('pending');
  });

  it('a failure over the threshold pauses the wave; resume reopens it; the transaction state follows the receipts', async () => {
    const pending = (await detail()).devices.filter((d: any) => d.state === 'pending').map((d: any) => d.device as string);
    await upload(pending[0], bytesOf(pending[0], receipt(pending[0], {}, 'rolled-back')));
    const paused = await detail();
    expect(paused.status).toBe('paused');
    // a paused wave hands out no work of THIS transaction (the device may be a canary of the second deployment)
    expect((await listAssignments(db(), tenant, pending[1], new Date())).filter((a) => a.transaction?.id === start.transaction_id)).toEqual([]);
    expect((await f.api('POST', `/api/v1/rollouts/${start.id}/resume`)).body.status).toBe('running');
    await upload(pending[1], bytesOf(pending[1], receipt(pending[1])));
    const done = await detail();
    expect(done.status).toBe('completed');
    const tx = await f.api('GET', `/api/v1/release-transactions/${start.transaction_id}`);
    expect(tx.body.state).toBe('rolled back');
    expect(tx.body.devices).toEqual({ total: 3, pending: 0, committed: 2, rolled_back: 1, failed: 0, skipped: 0 });
    expect((await f.api('POST', `/api/v1/rollouts/${start.id}/abort`)).status).toBe(409);

    // the rollout names what it rolls out, and its activity tells how it went
    expect(done).toMatchObject({ product: rel.product, version: rel.version, group_name: 'rx' });
    const activity = (await f.api('GET', `/api/v1/rollouts/${start.rollouts[1].rollout_id}/activity`)).body;
    expect(activity.timeline.map((e: any) => [e.action, e.detail.wave ?? null, e.detail.from ?? null, e.detail.to ?? null])).toEqual([
      ['rollout.start', null, null, null],
      ['rollout.wave', 0, 'open', 'done'],
      ['rollout.wave', 1, 'pending', 'awaiting_approval'],
      ['rollout.approve', null, null, null],
      ['rollout.wave', 1, 'awaiting_approval', 'open'],
      ['rollout.wave', 1, 'open', 'paused'],
      ['rollout.resume', null, null, null],
      ['rollout.wave', 1, 'paused', 'open'],
      ['rollout.wave', 1, 'open', 'done'],
    ]);
    expect(activity.timeline.filter((e: any) => e.action === 'rollout.wave').every((e: any) => e.actor === 'system:rollout')).toBe(true);
    expect(activity.timeline_truncated).toBe(false);
    expect(activity.failures).toEqual([{ reason: 'rolled-back, health unhealthy', count: 1, devices: [pending[0]] }]);
    expect((await f.api('GET', '/api/v1/rollouts/00000000-0000-4000-8000-000000000000/activity')).status).toBe(404);
    expect((await f.api('GET', '/api/v1/rollouts/not-an-id/activity')).status).toBe(404);
  });

  it("the device view shows the release of the device's newest activated receipt, its member digests, and the software by evidence source", async () => {
    const activated = [
      ...new Set((await f.api('GET', '/api/v1/release-receipts?activation=activated&limit=200')).body.release_receipts.map((r: any) => r.device)),
    ];
    expect(activated.length).toBeGreaterThan(1);
    for (const device of activated as string[]) {
      const view = (await f.api('GET', `/api/v1/devices/${device}`)).body;
      const nr = await f.api('GET', `/api/v1/release-receipts?device=${device}&activation=activated&limit=1`);
      const newest = nr.body.release_receipts[0];
      expect(newest, JSON.stringify(nr.body)).toBeDefined();
      expect(view.current_release, device).toEqual({
        release_id: rel.id,
        product: 'edge-gateway',
        version: rel.version,
        transaction_id: start.transaction_id,
        receipt_id: newest.id,
        label: 'software-key',
        accepted_at: newest.accepted_at,
        members: start.rollouts.map((m: any) => ({ component: m.component, digest: arts.find((a) => a.name === m.component).digest })),
      });
      expect(view.software, device).toEqual(
        arts
          .map((a) => ({ component: a.name, digest: a.digest, source: 'receipt', observed_at: expect.any(String) }))
          .sort((a, b) => (a.component < b.component ? -1 : 1)),
      );
    }
    // a rolled-back receipt is not the current release: only activated ones count
    const rb = await f.api('GET', '/api/v1/release-receipts?activation=rolled-back&limit=1');
    const rolledBack = rb.body.release_receipts[0];
    expect(rolledBack, JSON.stringify(rb.body)).toBeDefined();
    const view = (await f.api('GET', `/api/v1/devices/${rolledBack.device}`)).body;
    expect(view.current_release?.receipt_id).not.toBe(rolledBack.id);
    // a device without receipts runs nothing by a receipt's word
    await f.device('rx-new');
    const fresh = (await f.api('GET', '/api/v1/devices/rx-new')).body;
    expect(fresh).toMatchObject({ name: 'rx-new', current_release: null, software: [] });
  });

  it('serves deterministic result manifests referencing every member', async () => {
    const a = await f.t.app.inject({ method: 'GET', url: `/api/v1/release-transactions/${start.transaction_id}/result`, headers: f.admin });
    const b = await f.t.app.inject({ method: 'GET', url: `/api/v1/release-transactions/${start.transaction_id}/result`, headers: f.admin });
    expect(a.statusCode).toBe(200);
    expect(a.rawPayload.equals(b.rawPayload)).toBe(true);
    const doc = JSON.parse(a.body);
    // the bytes are RFC 8785 canonical JSON
    expect(Buffer.from(canonicalize(doc)).equals(a.rawPayload)).toBe(true);
    expect(doc.transaction_id).toBe(start.transaction_id);
    expect(doc.devices.map((d: any) => d.device)).toEqual([...DEVICES].sort());
    for (const d of doc.devices) {
      expect(d.members.map((m: any) => [m.rollout_id, m.artifact_id, m.digest, m.position])).toEqual(
        start.rollouts.map((m: any) => [m.rollout_id, m.artifact_id, arts.find((x) => x.name === m.component).digest, m.position]),
      );
    }
    expect(doc.devices.filter((d: any) => d.state === 'rolled back')).toHaveLength(1);
  });

  it('exports the accepted envelopes byte-exact in a tar with an index', async () => {
    const res = await f.t.app.inject({ method: 'GET', url: '/api/v1/release-receipts/export', headers: f.admin });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/x-tar');
    const files = await untar(res.rawPayload);
    const index = files
      .get('index.jsonl')!
      .toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(index).toHaveLength(3);
    for (const e of index) {
      const bytes = files.get(e.file)!;
      expect(envelopeDigest(JSON.parse(bytes.toString()))).toBe(e.envelope_digest);
      expect(e).toMatchObject({ transaction_id: start.transaction_id, release_id: rel.id, label: 'software-key' });
      expect(DEVICES).toContain(e.device);
    }
    const viewer = await f.t.loginAs('viewer');
    expect((await f.t.app.inject({ method: 'GET', url: '/api/v1/release-receipts/export', headers: viewer })).statusCode).toBe(200);
  });

  it('lists accepted receipts with filters, spec §8 paging and counts; one receipt shows its envelope, verification and label', async () => {
    const get = async (url: string, headers = f.admin) => f.api('GET', url, undefined, headers);
    const doc = (await get('/api/v1/openapi.json')).body;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    const schemaOf = (path: string) =>
      ajv.compile({ ...doc.paths[path].get.responses['200'].content['application/json'].schema, unevaluatedProperties: false });
    const validList = schemaOf('/api/v1/release-receipts');
    const validOne = schemaOf('/api/v1/release-receipts/{id}');
    expect(doc.paths['/api/v1/release-receipts'].get['x-permission']).toBe('receipts.read');
    expect(doc.paths['/api/v1/release-receipts/{id}'].get['x-permission']).toBe('receipts.read');

    const all = (await get('/api/v1/release-receipts')).body;
    expect(validList(all), ajv.errorsText(validList.errors)).toBe(true);
    expect(Object.keys(all)).toEqual(['release_receipts', 'total', 'limit', 'offset', 'counts']);
    expect(all).toMatchObject({ total: 3, limit: 50, offset: 0, counts: { activated: 2, 'rolled-back': 1, failed: 0 } });
    const items = all.release_receipts as any[];
    expect(items.map((r) => r.device).sort()).toEqual([...DEVICES].sort());
    for (const r of items) expect(r).toMatchObject({ transaction_id: start.transaction_id, release_id: rel.id, rollout_id: start.id, label: 'software-key' });
    // newest first (ties by id, newest first too)
    const order = [...items].sort((a, b) => (a.accepted_at === b.accepted_at ? (a.id < b.id ? 1 : -1) : a.accepted_at < b.accepted_at ? 1 : -1));
    expect(items.map((r) => r.id)).toEqual(order.map((r) => r.id));
    const rolledBack = items.find((r) => r.activation === 'rolled-back');

    const found = async (q: string) => {
      const body = (await get(`/api/v1/release-receipts?${q}`)).body;
      expect(body.counts, q).toEqual(all.counts); // counts break down the tenant's whole set
      expect(body.total, q).toBe(body.release_receipts.length);
      return body.release_receipts.map((r: any) => r.id);
    };
    expect(await found(`device=${rolledBack.device}`)).toEqual([rolledBack.id]);
    expect(await found('activation=rolled-back')).toEqual([rolledBack.id]);
    expect(await found(`activation=activated&device=${rolledBack.device}`)).toEqual([]);
    expect(await found(`transaction_id=${start.transaction_id}`)).toEqual(items.map((r) => r.id));
    expect(await found('transaction_id=00000000-0000-4000-8000-000000000000')).toEqual([]);
    // a receipt covers its whole transaction: any member rollout finds it
    expect(await found(`rollout_id=${start.rollouts[1].rollout_id}`)).toEqual(items.map((r) => r.id));
    const second = (await get('/api/v1/rollouts?limit=200')).body.rollouts.find(
      (r: any) => r.transaction_id !== null && r.transaction_id !== start.transaction_id,
    );
    expect(await found(`rollout_id=${second.id}`)).toEqual([]);
    expect(await found('label=software-key')).toEqual(items.map((r) => r.id));
    expect(await found('label=hardware-tpm')).toEqual([]);
    const paged = (await get('/api/v1/release-receipts?limit=1&offset=1')).body;
    expect(paged).toMatchObject({ total: 3, limit: 1, offset: 1 });
    expect(paged.release_receipts.map((r: any) => r.id)).toEqual([items[1].id]);
    expect((await get('/api/v1/release-receipts?limit=500')).body.limit).toBe(200);
    for (const [q, field] of [
      ['transaction_id=nope', 'transaction_id'],
      ['rollout_id=1', 'rollout_id'],
      ['activation=maybe', 'activation'],
      ['nope=1', 'nope'],
    ]) {
      const bad = await get(`/api/v1/release-receipts?${q}`);
      expect(bad.status, q).toBe(400);
      expect(bad.body.error, q).toMatch(new RegExp(`^querystring\\.${field}`));
    }

    const one = await get(`/api/v1/release-receipts/${rolledBack.id}`);
    expect(one.status).toBe(200);
    expect(validOne(one.body), ajv.errorsText(validOne.errors)).toBe(true);
    const { envelope, payload, verification, ...fields } = one.body;
    expect(fields).toEqual(rolledBack);
    // the exact accepted envelope and its payload
    expect(envelopeDigest(envelope)).toBe(rolledBack.envelope_digest);
    expect(payload).toEqual(JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')));
    expect(payload).toMatchObject({ activation: 'rolled-back', device: { name: rolledBack.device }, transaction: { id: start.transaction_id } });
    expect(verification).toEqual({
      verified: true,
      checked_at: f.t.clock.now().toISOString(),
      certificate_valid_at: rolledBack.accepted_at,
      error: null,
      device_certificate: {
        fingerprint: `sha256:${createHash('sha256')
          .update(ids[rolledBack.device as string]!.certDer)
          .digest('hex')}`,
        serial_number: expect.any(String),
        subject_cn: rolledBack.device,
        not_before: expect.any(String),
        not_after: expect.any(String),
      },
    });

    // verified again on every read: under another device CA the same bytes no longer verify
    const cas = db().selectFrom('device_cas').select('cert_der').where('tenant_id', '=', tenant);
    const original = (await cas.executeTakeFirstOrThrow()).cert_der;
    const other = await createCa(`svc device CA ${tenant}`, f.t.clock.now(), 30);
    await db()
      .updateTable('device_cas')
      .set({ cert_der: Buffer.from(other.certDer) })
      .where('tenant_id', '=', tenant)
      .execute();
    try {
      const v = (await get(`/api/v1/release-receipts/${rolledBack.id}`)).body.verification;
      expect(v).toMatchObject({
        verified: false,
        error: 'CERT_UNTRUSTED: device certificate signature does not verify with the tenant device CA key',
        device_certificate: null,
      });
    } finally {
      await db().updateTable('device_cas').set({ cert_der: original }).where('tenant_id', '=', tenant).execute();
    }

    const viewer = await f.t.loginAs('viewer');
    expect((await get(`/api/v1/release-receipts/${rolledBack.id}`, viewer)).status).toBe(200);
    expect((await get('/api/v1/release-receipts', viewer)).body.total).toBe(3);
    for (const id of ['not-a-uuid', '00000000-0000-4000-8000-000000000000']) {
      const missing = await get(`/api/v1/release-receipts/${id}`);
      expect(missing.status).toBe(404);
      expect(missing.body.error).toBe(`release receipt ${id} not found`);
    }
    // another tenant's receipts are not found, and not counted
    const foreign = await f.t.loginAs('admin', await f.t.newTenant());
    expect((await get(`/api/v1/release-receipts/${rolledBack.id}`, foreign)).status).toBe(404);
    expect((await get('/api/v1/release-receipts', foreign)).body).toMatchObject({
      release_receipts: [],
      total: 0,
      counts: { activated: 0, 'rolled-back': 0, failed: 0 },
    });

    // the transactions' state breakdown follows the receipts: one rolled back, the second deployment still running
    expect((await get('/api/v1/release-transactions')).body.counts).toEqual({ running: 1, committed: 0, 'rolled back': 1, failed: 0 });
  });

  it('legacy rollouts stay labelled legacy and device-reported', async () => {
    const group = (await f.api('POST', '/api/v1/groups', { name: 'legacy', members: ['rx-1', 'rx-2'] })).body;
    const lg = await f.api('POST', '/api/v1/rollouts', { artifact_id: arts[0].id, group_id: group.id });
    expect(lg.status).toBe(201);
    expect(lg.body).toMatchObject({ kind: 'legacy', release_id: null, transaction_id: null, evidence: 'device-reported' });
    const a = (await listAssignments(db(), tenant, 'rx-1', new Date())).find((x) => x.rollout_id === lg.body.id)!;
    expect(a).toMatchObject({ kind: 'legacy', legacy: { artifact_id: arts[0].id, digest: arts[0].digest, target: arts[0].target } });
    expect(a.release).toBeUndefined();
    await legacyReport('rx-1', lg.body.id, 'installed');
    await expect(legacyReport('rx-3', lg.body.id, 'installed')).rejects.toThrow(/not assigned/);
    const d = (await f.api('GET', `/api/v1/rollouts/${lg.body.id}`)).body;
    expect(d.progress).toMatchObject({ installed: 1, pending: 1 });
    expect(d).toMatchObject({ product: 'rx-conf', version: '1.0.0', group_name: 'legacy' });
    await asDevice('rx-2', (uow) => reportLegacyStatus(uow, { deviceName: 'rx-2', rolloutId: lg.body.id, status: 'failed', detail: 'disk full' }));
    const activity = (await f.api('GET', `/api/v1/rollouts/${lg.body.id}/activity`)).body;
    expect(activity.failures).toEqual([{ reason: 'disk full', count: 1, devices: ['rx-2'] }]);
    expect(activity.timeline.map((e: any) => e.action)).toEqual(['rollout.start', 'rollout.wave']);
    const list = await f.api('GET', '/api/v1/rollouts?kind=legacy');
    expect(list.body.rollouts.map((r: any) => r.kind)).toEqual(['legacy']);
    // legacy work never appears as a release transaction
    expect((await f.api('GET', '/api/v1/release-transactions')).body.release_transactions.every((t: any) => t.id !== lg.body.id)).toBe(true);
  });
});
