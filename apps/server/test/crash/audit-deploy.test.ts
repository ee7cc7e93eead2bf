import { envelopeBytes, signReceipt, type ReceiptPayload } from '@svc/release-core';
import { expect } from 'vitest';
import { acceptReceipt } from '../../src/resources/release-receipts/commands.js';
import { deviceActor, runUnitOfWork } from '../../src/resources/unit-of-work.js';
import { auditCrashSuite } from '../helpers/audit-crash.js';
import { deviceIdentity, newAuthorizer, releasePayload, sign, type ReleaseFixture } from '../fixtures/release-flow.js';

/** A published single-component release to a new group of `devices` (all through the API). */
async function publishedRelease(f: ReleaseFixture, name: string, devices: string[], over: { waves?: unknown[]; failure_threshold?: unknown } = {}) {
  for (const d of devices) await f.device(d);
  const art = (await f.upload({ name, version: '1.0.0', kind: 'config', bytes: `${name} bytes` })).body;
  const group = (await f.api('POST', '/api/v1/groups', { name, members: devices })).body;
  const auth = newAuthorizer();
  expect((await f.api('POST', '/api/v1/authorizer-keys', { name, public_key_pem: auth.pem })).status).toBe(201);
  const envelope = sign(releasePayload({ tenant: f.t.tenantId, product: name, artifacts: [art], group, ...over }), auth.key);
  return { art, group, envelope };
}

/** A legacy rollout of a new artifact to a new group; the first wave gated when asked. */
async function legacyRollout(f: ReleaseFixture, name: string, gated: boolean) {
  const { art, group } = await publishedRelease(f, name, [`${name}-1`, `${name}-2`]);
  const waves = gated ? [{ count: 1, requires_approval: true }, { count: 2 }] : undefined;
  const start = await f.api('POST', '/api/v1/rollouts', { artifact_id: art.id, group_id: group.id, ...(waves ? { waves } : {}) });
  expect(start.status, JSON.stringify(start.body)).toBe(201);
  return start.body as { id: string; status: string };
}

auditCrashSuite('releases, rollouts and receipts', [
  {
    name: 'release publish',
    action: 'release.publish',
    prepare: async (f) => {
      const { envelope } = await publishedRelease(f, 'crash-publish', ['crash-publish-1']);
      return {
        // the envelope enters the signing repository before the unit of work; the record does not
        request: { method: 'POST', url: '/api/v1/releases', payload: { envelope, expected_product: 'crash-publish' } },
        observe: { method: 'GET', url: '/api/v1/releases?product=crash-publish' },
      };
    },
  },
  {
    name: 'signed rollout start',
    action: 'rollout.start',
    prepare: async (f) => {
      const { envelope } = await publishedRelease(f, 'crash-signed', ['crash-signed-1', 'crash-signed-2']);
      const rel = await f.api('POST', '/api/v1/releases', { envelope, expected_product: 'crash-signed' });
      expect(rel.status, JSON.stringify(rel.body)).toBe(201);
      return {
        request: { method: 'POST', url: '/api/v1/rollouts', payload: { release_id: rel.body.id } },
        observe: { method: 'GET', url: `/api/v1/rollouts?release_id=${rel.body.id}` },
      };
    },
  },
  {
    name: 'legacy rollout start',
    action: 'rollout.start',
    prepare: async (f) => {
      const { art, group } = await publishedRelease(f, 'crash-legacy', ['crash-legacy-1']);
      return {
        request: { method: 'POST', url: '/api/v1/rollouts', payload: { artifact_id: art.id, group_id: group.id } },
        observe: { method: 'GET', url: '/api/v1/rollouts?kind=legacy&limit=200' },
      };
    },
  },
  {
    name: 'rollout approve',
    action: 'rollout.approve',
    prepare: async (f) => {
      const r = await legacyRollout(f, 'crash-approve', true);
      expect(r.status).toBe('awaiting_approval');
      return { request: { method: 'POST', url: `/api/v1/rollouts/${r.id}/approve` }, observe: { method: 'GET', url: `/api/v1/rollouts/${r.id}` } };
    },
  },
  {
    name: 'rollout resume',
    action: 'rollout.resume',
    prepare: async (f) => {
      // a signed rollout whose canary wave pauses on its first failure (threshold 0)
      const devices = ['crash-resume-1', 'crash-resume-2'];
      const { art, envelope } = await publishedRelease(f, 'crash-resume', devices, { waves: [{ count: 1 }, { count: 2 }], failure_threshold: { count: 0 } });
      const rel = (await f.api('POST', '/api/v1/releases', { envelope, expected_product: 'crash-resume' })).body;
      const start = (await f.api('POST', '/api/v1/rollouts', { release_id: rel.id })).body;
      const canary = (await f.api('GET', `/api/v1/rollouts/${start.id}`)).body.devices.find((d: { wave: number }) => d.wave === 0).device as string;
      const id = await deviceIdentity(f, canary);
      const payload = {
        tenant: f.t.tenantId,
        device: { name: canary, certificate: Buffer.from(id.certDer).toString('base64') },
        release: { product: rel.product, version: rel.version, payload_digest: rel.payload_digest, envelope_digest: rel.envelope_digest },
        rollout: start.id,
        candidate_digest: art.digest,
        previous_digest: null,
        resulting_digest: null,
        activation: 'rolled-back',
        health: 'unhealthy',
        timestamp: '2026-06-01T00:00:00Z',
      } as unknown as ReceiptPayload;
      // the device's receipt, as the device channel runs it
      await runUnitOfWork(f.t.testStore.store.db, { tenant: f.t.tenantId, actor: deviceActor(canary), now: f.t.clock.now() }, (uow) =>
        acceptReceipt(uow, { deviceName: canary, connectionCertificateDer: id.certDer, envelopeBytes: envelopeBytes(signReceipt(payload, id.key)) }),
      );
      expect((await f.api('GET', `/api/v1/rollouts/${start.id}`)).body.status).toBe('paused');
      return { request: { method: 'POST', url: `/api/v1/rollouts/${start.id}/resume` }, observe: { method: 'GET', url: `/api/v1/rollouts/${start.id}` } };
    },
  },
  {
    name: 'rollout abort',
    action: 'rollout.abort',
    prepare: async (f) => {
      const r = await legacyRollout(f, 'crash-abort', false);
      return { request: { method: 'POST', url: `/api/v1/rollouts/${r.id}/abort` }, observe: { method: 'GET', url: `/api/v1/rollouts/${r.id}` } };
    },
  },
  {
    name: 'receipt export',
    action: 'release-receipts.export',
    prepare: async () => ({
      request: { method: 'GET', url: '/api/v1/release-receipts/export' },
      // reading evidence out changes nothing but the audit trail: its row is what the export writes
      observe: { method: 'GET', url: '/api/v1/audit?action=release-receipts.export' },
    }),
  },
]);
