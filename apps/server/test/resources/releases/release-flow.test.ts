import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalize, envelopeBytes, envelopeDigest, signEnvelope, type Envelope } from '@svc/release-core';
import { listAssignments } from '../../../src/resources/rollouts/queries.js';
import { availableDrivers } from '../../helpers/store.js';
import { createReleaseFixture, newAuthorizer, releasePayload, sign, type ReleaseFixture } from '../../fixtures/release-flow.js';

const sha = (b: Uint8Array | string) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

describe.each(availableDrivers())('publish and deploy on %s', (driver) => {
  let f: ReleaseFixture;
  let tenant: string;
  beforeAll(async () => {
    f = await createReleaseFixture(driver);
    tenant = f.t.tenantId;
    for (const d of ['dev-a', 'dev-b', 'dev-c']) await f.device(d);
    await f.device('dev-rtos', 'rtos-m4');
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('publishes an artifact into the signing repository before recording it; refuses bad fields naming them', async () => {
    const bytes = 'model weights v1';
    const r = await f.upload({ name: 'detector', version: '1.0.0', kind: 'model', bytes, filename: 'detector.onnx' });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      name: 'detector',
      version: '1.0.0',
      kind: 'model',
      digest: sha(bytes),
      length: bytes.length,
      media_type: 'application/octet-stream',
      target: 'artifacts/detector/1.0.0/detector.onnx',
    });
    // spec §1 rule 2: the TUF targets metadata names it
    const info = await f.repo.getTargetInfo(tenant, r.body.target);
    expect(info?.digest).toBe(sha(bytes));
    expect((await f.upload({ name: 'detector', version: '1.0.0', kind: 'model', bytes: 'other' })).status).toBe(409);
    const bad = [
      [{ name: 'Bad Name', version: '1', kind: 'model', bytes: 'x' }, /^name: /],
      [{ name: 'ok', version: '-1', kind: 'model', bytes: 'x' }, /^version: /],
      [{ name: 'ok', version: '1', kind: 'firmware', bytes: 'x' }, /^kind: /],
      [{ name: 'ok', version: '1', kind: 'os-bundle', bytes: 'x', filename: 'a.bin' }, /^file: .*\.raucb/],
    ] as const;
    for (const [a, re] of bad) {
      const res = await f.upload(a);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error).toMatch(re);
    }
    const viewer = await f.t.loginAs('viewer');
    const denied = await f.upload({ name: 'ok', version: '1', kind: 'model', bytes: 'x' }, viewer);
    expect(denied).toEqual({ status: 403, body: { error: 'missing permission: artifacts.write' } });
  });

  it('lists with kind and severity filters, patches only mutable fields, attaches and serves SBOMs', async () => {
    const c = await f.upload({ name: 'web', version: '2.0.0', kind: 'container', bytes: 'oci' });
    expect(c.status).toBe(201);
    const list = await f.api('GET', '/api/v1/artifacts?kind=container');
    expect(list.body).toMatchObject({ total: 1, limit: 50, offset: 0 });
    expect(list.body.artifacts[0].name).toBe('web');
    expect(list.body.counts.container).toBe(1);
    expect((await f.api('GET', '/api/v1/artifacts?kind=nope')).status).toBe(400);

    expect(
      (
        await f.api(
          'PATCH',
          `/api/v1/artifacts/${c.body.id}`,
          { description: 'front end', labels: { team: 'web' } },
          { ...f.admin, prefer: 'return=representation' },
        )
      ).body,
    ).toMatchObject({ description: 'front end', labels: { team: 'web' } });
    const imm = await f.api('PATCH', `/api/v1/artifacts/${c.body.id}`, { version: '9' });
    expect(imm.status).toBe(400);
    expect(imm.body.error).toMatch(/^version: is immutable/);

    // a severity typed into the SBOM is not a finding: the filter reads findings (docs/vulnerabilities.md)
    const bom = JSON.stringify({
      bomFormat: 'CycloneDX',
      specVersion: '1.5',
      components: [],
      vulnerabilities: [{ id: 'CVE-1', ratings: [{ severity: 'critical' }] }],
    });
    const put = await f.t.app.inject({
      method: 'PUT',
      url: `/api/v1/artifacts/${c.body.id}/sbom`,
      headers: { ...f.admin, 'content-type': 'application/vnd.cyclonedx+json' },
      payload: bom,
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(JSON.parse(put.body)).toMatchObject({ format: 'cyclonedx', spec_version: '1.5', components: 0, findings: 0 });
    expect((await f.api('GET', '/api/v1/artifacts?severity=critical')).body.total).toBe(0);
    expect((await f.api('GET', '/api/v1/artifacts?severity=bogus')).status).toBe(400);
    const got = await f.t.app.inject({ method: 'GET', url: `/api/v1/artifacts/${c.body.id}/sbom`, headers: f.admin });
    expect(got.headers['content-type']).toBe('application/vnd.cyclonedx+json');
    expect(got.body).toBe(bom);
    const spdx = await f.t.app.inject({
      method: 'PUT',
      url: `/api/v1/artifacts/${c.body.id}/sbom`,
      headers: { ...f.admin, 'content-type': 'application/spdx+json' },
      payload: JSON.stringify({ spdxVersion: 'SPDX-2.3', name: 'x' }),
    });
    expect(spdx.statusCode).toBe(400);
    expect(JSON.parse(spdx.body).error).toMatch(/^SPDXID: /);
  });

  it('an artifact record never exists before its signed target; a crash between them leaves none and a retry succeeds', async () => {
    let armed = true;
    f.hooks.afterTargetsCommitted = () => {
      if (armed) {
        armed = false;
        throw new Error('injected crash after metadata commit');
      }
    };
    try {
      const first = await f.upload({ name: 'crashy', version: '1.0.0', kind: 'config', bytes: 'conf' });
      expect(first.status).toBe(500);
      expect((await f.api('GET', '/api/v1/artifacts?q=crashy')).body.total).toBe(0);
      expect(await f.repo.getTargetInfo(tenant, 'artifacts/crashy/1.0.0/crashy.bin')).toBeDefined();
      const retry = await f.upload({ name: 'crashy', version: '1.0.0', kind: 'config', bytes: 'conf' });
      expect(retry.status).toBe(201);
    } finally {
      delete f.hooks.afterTargetsCommitted;
    }
  });

  it('groups keep a current snapshot digest; unknown devices are refused by name', async () => {
    const g = await f.api('POST', '/api/v1/groups', { name: 'snap', members: ['dev-b', 'dev-a'] });
    expect(g.status).toBe(201);
    const { targetPolicyDigest } = await import('@svc/release-core');
    expect(g.body).toMatchObject({
      name: 'snap',
      members: ['dev-a', 'dev-b'],
      snapshot_digest: targetPolicyDigest({ tenant, group: g.body.id, members: ['dev-a', 'dev-b'] }),
    });
    const unknown = await f.api('POST', `/api/v1/groups/${g.body.id}/members`, { devices: ['dev-c', 'ghost'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe('devices: unknown device "ghost"');
    const added = await f.api('POST', `/api/v1/groups/${g.body.id}/members`, { devices: ['dev-c'] }, { ...f.admin, prefer: 'return=representation' });
    expect(added.body.snapshot_digest).toBe(targetPolicyDigest({ tenant, group: g.body.id, members: ['dev-a', 'dev-b', 'dev-c'] }));
    const other = await f.t.newTenant();
    const foreign = await f.api('GET', `/api/v1/groups/${g.body.id}`, undefined, await f.t.loginAs('admin', other));
    expect(foreign.status).toBe(404);
  });

  describe('signed releases', () => {
    let arts: any[];
    let group: any;
    let auth: ReturnType<typeof newAuthorizer>;
    let keyId: string;
    const payloadFor = (over: Partial<Parameters<typeof releasePayload>[0]> = {}) => releasePayload({ tenant, artifacts: arts, group, ...over });

    beforeAll(async () => {
      arts = [
        (await f.upload({ name: 'rel-conf', version: '1.0.0', kind: 'config', bytes: 'conf bytes' })).body,
        (await f.upload({ name: 'rel-model', version: '1.0.0', kind: 'model', bytes: 'model bytes' })).body,
      ];
      group = (await f.api('POST', '/api/v1/groups', { name: 'field', members: ['dev-a', 'dev-b'] })).body;
      auth = newAuthorizer();
      const k = await f.api('POST', '/api/v1/authorizer-keys', { name: 'release-signing', public_key_pem: auth.pem });
      expect(k.status).toBe(201);
      expect(k.body.keyid).toBe(auth.key.publicKey.keyid);
      keyId = k.body.id;
    });

    const submit = (envelope: unknown, product = 'edge-gateway') => f.api('POST', '/api/v1/releases', { envelope, expected_product: product });

    it('publishes the exact envelope as an immutable TUF target; same envelope again is 200, a different one 409', async () => {
      const env = sign(payloadFor(), auth.key);
      const r = await submit(env);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      expect(r.body).toMatchObject({
        product: 'edge-gateway',
        version: '1.0.0',
        envelope_digest: envelopeDigest(env),
        target: 'releases/edge-gateway/1.0.0.dsse.json',
      });
      const info = await f.repo.getTargetInfo(tenant, r.body.target);
      expect(info?.digest).toBe(sha(envelopeBytes(env)));
      const again = await submit(env);
      expect(again.status).toBe(200);
      expect(again.body.id).toBe(r.body.id);
      const other = sign({ ...payloadFor(), approvals: [{ system: 'jira', ref: 'OPS-2' }] }, auth.key);
      const conflict = await submit(other);
      expect(conflict.status).toBe(409);
      expect(conflict.body.error).toMatch(/already published/);
      expect((await f.api('GET', `/api/v1/releases/${r.body.id}`)).body.id).toBe(r.body.id);
    });

    it('refuses every submission rule of spec 4 with an actionable reason', async () => {
      const good = sign(payloadFor({ version: '1.1.0' }), auth.key);
      const tampered: Envelope = { ...good, signatures: [{ keyid: good.signatures[0]!.keyid, sig: Buffer.alloc(64, 7).toString('base64') }] };
      const stranger = newAuthorizer();
      const p = payloadFor({ version: '1.2.0' });
      const missingSafety = { ...p } as Record<string, unknown>;
      delete missingSafety['recovery'];
      const unsafeEnv = signEnvelope('svc.release.v1', canonicalize(missingSafety), auth.key);
      const cases: [string, unknown, string, number, RegExp][] = [
        ['bad signature', tampered, 'edge-gateway', 400, /^SIGNATURE_INVALID: /],
        ['unregistered key', sign(payloadFor({ version: '1.3.0' }), stranger.key), 'edge-gateway', 400, /^KEY_UNTRUSTED: /],
        [
          'wrong tenant',
          sign(releasePayload({ tenant: '00000000-0000-4000-8000-000000000000', artifacts: arts, group, version: '1.4.0' }), auth.key),
          'edge-gateway',
          400,
          /^TENANT_MISMATCH: .*tenant/,
        ],
        ['wrong product', sign(payloadFor({ version: '1.5.0' }), auth.key), 'other-product', 400, /^PRODUCT_MISMATCH: .*product/],
        ['outside validity', sign(payloadFor({ version: '1.6.0', notAfter: '2021-01-01T00:00:00Z' }), auth.key), 'edge-gateway', 400, /^EXPIRED: .*expired/],
        ['missing safety fields', unsafeEnv, 'edge-gateway', 400, /^PAYLOAD_INVALID: .*recovery/],
        [
          'unknown artifact',
          sign(releasePayload({ tenant, group, version: '1.7.0', artifacts: [{ ...arts[0], id: '11111111-1111-4111-8111-111111111111' }] }), auth.key),
          'edge-gateway',
          400,
          /components\[0\]\.artifact\.id/,
        ],
      ];
      for (const [name, env, product, status, re] of cases) {
        const r = await submit(env, product);
        expect(r.status, `${name}: ${JSON.stringify(r.body)}`).toBe(status);
        expect(r.body.error, name).toMatch(re);
      }
      expect((await f.api('GET', '/api/v1/releases?product=edge-gateway')).body.total).toBe(1);
    });

    it("refuses a release whose target-policy digest is no longer the group's at submission, publishing nothing (spec §4 rule 3)", async () => {
      const g = (await f.api('POST', '/api/v1/groups', { name: 'moving', members: ['dev-a'] })).body;
      const env = sign(releasePayload({ tenant, artifacts: arts, group: g, version: '1.8.0' }), auth.key);
      // membership changes after signing: the group's digest is no longer the signed one
      const moved = (await f.api('POST', `/api/v1/groups/${g.id}/members`, { devices: ['dev-b'] }, { ...f.admin, prefer: 'return=representation' })).body;
      expect(moved.snapshot_digest).not.toBe(g.snapshot_digest);
      const r = await submit(env);
      expect(r.status, JSON.stringify(r.body)).toBe(409);
      expect(r.body.error).toBe(
        `rollout.target_policy_digest: signed ${g.snapshot_digest} but group ${g.id} is now ${moved.snapshot_digest} (membership changed; sign a new release)`,
      );
      expect(await f.repo.getTargetInfo(tenant, 'releases/edge-gateway/1.8.0.dsse.json')).toBeUndefined();
      expect((await f.api('GET', '/api/v1/releases?product=edge-gateway')).body.releases.map((x: any) => x.version)).not.toContain('1.8.0');
      // signed against the current membership, the same release is accepted
      expect((await submit(sign(releasePayload({ tenant, artifacts: arts, group: moved, version: '1.8.0' }), auth.key))).status).toBe(201);
    });

    it('starts a two-component rollout bound by a transaction; re-verifies group, key and devices at start', async () => {
      const env = sign(payloadFor({ version: '2.0.0' }), auth.key);
      const rel = (await submit(env)).body;
      const start = await f.api('POST', '/api/v1/rollouts', { release_id: rel.id });
      expect(start.status, JSON.stringify(start.body)).toBe(201);
      expect(start.body).toMatchObject({ kind: 'signed', release_id: rel.id, status: 'running' });
      expect(start.body.rollouts.map((m: any) => [m.component, m.group, m.position])).toEqual([
        ['rel-conf', 0, 0],
        ['rel-model', 1, 1],
      ]);
      const tx = await f.api('GET', `/api/v1/release-transactions/${start.body.transaction_id}`);
      expect(tx.body).toMatchObject({ id: start.body.transaction_id, release_id: rel.id, member_count: 2, state: 'running' });
      expect(tx.body.members.map((m: any) => m.rollout_id)).toEqual(start.body.rollouts.map((m: any) => m.rollout_id));
      // spec §3 rule 2: a second deployment of the same release gets its own transaction
      const second = await f.api('POST', '/api/v1/rollouts', { release_id: rel.id });
      expect(second.body.transaction_id).not.toBe(start.body.transaction_id);
      const assigned = await listAssignments(f.t.testStore.store.db, tenant, 'dev-a', new Date());
      const mine = assigned.find((a) => a.transaction?.id === start.body.transaction_id)!;
      expect(mine).toMatchObject({
        kind: 'signed',
        rollout_id: start.body.id,
        release: { release_id: rel.id, envelope_target: rel.target, envelope_digest: rel.envelope_digest },
      });
      expect(mine.transaction!.members).toHaveLength(2);
      expect(await listAssignments(f.t.testStore.store.db, tenant, 'dev-c', new Date())).toEqual([]);
      const listed = await f.api('GET', '/api/v1/release-transactions');
      expect(listed.body.total).toBe(2);
      expect(listed.body.counts.running).toBe(2);
    });

    it('aborts a running rollout: every member stops, no device is handed its work, the audit row names the transaction', async () => {
      const g = (await f.api('POST', '/api/v1/groups', { name: 'to-abort', members: ['dev-a', 'dev-b'] })).body;
      const rel = (await submit(sign(releasePayload({ tenant, artifacts: arts, group: g, version: '2.1.0' }), auth.key))).body;
      const start = (await f.api('POST', '/api/v1/rollouts', { release_id: rel.id })).body;
      const work = async (device: string) =>
        (await listAssignments(f.t.testStore.store.db, tenant, device, new Date())).filter((a) => a.transaction?.id === start.transaction_id);
      expect(await work('dev-a')).toHaveLength(1);
      expect(await work('dev-b')).toHaveLength(1);

      // any member controls the whole transaction
      const member = start.rollouts[1].rollout_id as string;
      const ab = await f.api('POST', `/api/v1/rollouts/${member}/abort`);
      expect(ab.status, JSON.stringify(ab.body)).toBe(200);
      expect(ab.body).toMatchObject({ id: member, status: 'aborted', transaction_id: start.transaction_id, progress: { pending: 2 } });
      expect((await f.api('GET', `/api/v1/rollouts/${start.id}`)).body.status).toBe('aborted');
      const audit = (await f.api('GET', '/api/v1/audit?action=rollout.abort')).body.events;
      expect(audit).toHaveLength(1);
      expect(audit[0]).toMatchObject({ target: `rollout:${member}`, detail: { status: 'aborted', transaction_id: start.transaction_id } });
      // abort stops handing out work: no device is assigned it any more
      expect(await work('dev-a')).toEqual([]);
      expect(await work('dev-b')).toEqual([]);
      // aborted before any device reported: nothing committed, the transaction failed its goal
      expect((await f.api('GET', `/api/v1/release-transactions/${start.transaction_id}`)).body).toMatchObject({
        aborted: true,
        state: 'failed',
        devices: { total: 2, pending: 2 },
      });
      for (const action of ['abort', 'approve', 'resume']) {
        const again = await f.api('POST', `/api/v1/rollouts/${start.id}/${action}`);
        expect(again.status, action).toBe(409);
        expect(again.body.error).toBe(`rollout ${start.id}: is aborted`);
      }
      expect((await f.api('GET', '/api/v1/audit?action=rollout.abort')).body.total).toBe(1);
    });

    it('refuses a release without a health probe or with a non-rollback recovery policy (spec 4: health probe, recovery policy)', async () => {
      const noProbe = { ...payloadFor({ version: '2.5.0' }), health: { probes: [], timeout_s: 60 } };
      const env = signEnvelope('svc.release.v1', canonicalize(noProbe), auth.key);
      const sub = await submit(env);
      if (sub.status === 201) {
        // accepted as a document: the rollout start must refuse it
        const start = await f.api('POST', '/api/v1/rollouts', { release_id: sub.body.id });
        expect(start.status).toBe(400);
        expect(start.body.error).toMatch(/^health.probes: /);
      } else {
        expect(sub.status).toBe(400);
        expect(sub.body.error).toMatch(/health/);
      }
      const halt = { ...payloadFor({ version: '2.6.0', profiles: ['linux-arm64'] }), recovery: { on_failure: 'halt', rollback_boundary: 'component' } };
      const r = await submit(signEnvelope('svc.release.v1', canonicalize(halt), auth.key));
      expect(r.status).toBe(400);
      expect(r.body.error).toMatch(/recovery\.on_failure/);
    });

    it('refuses rollout start: revoked key, changed group, incompatible device, tightening-only overrides', async () => {
      const env = sign(
        payloadFor({ version: '3.0.0', waves: [{ count: 1, requires_approval: true }, { count: 2 }], failure_threshold: { count: 1 } }),
        auth.key,
      );
      const rel = (await submit(env)).body;
      const loosen = await f.api('POST', '/api/v1/rollouts', { release_id: rel.id, overrides: { failure_threshold: { count: 5 } } });
      expect(loosen.status).toBe(400);
      expect(loosen.body.error).toMatch(/^overrides.failure_threshold.count/);

      // incompatible device: a group containing an rtos device
      const g2 = (await f.api('POST', '/api/v1/groups', { name: 'mixed', members: ['dev-a', 'dev-rtos'] })).body;
      const env2 = sign(releasePayload({ tenant, artifacts: arts, group: g2, version: '3.1.0' }), auth.key);
      const rel2 = (await submit(env2)).body;
      const inc = await f.api('POST', '/api/v1/rollouts', { release_id: rel2.id });
      expect(inc.status).toBe(409);
      expect(inc.body.error).toMatch(/dev-rtos/);

      // changed group: membership changed after signing
      await f.api('POST', `/api/v1/groups/${group.id}/members`, { devices: ['dev-c'] });
      const changed = await f.api('POST', '/api/v1/rollouts', { release_id: rel.id });
      expect(changed.status).toBe(409);
      expect(changed.body.error).toMatch(/^rollout.target_policy_digest: /);

      // revoked key: releases it signed can no longer start
      const g3 = (await f.api('GET', `/api/v1/groups/${group.id}`)).body;
      const env3 = sign(releasePayload({ tenant, artifacts: arts, group: g3, version: '3.2.0' }), auth.key);
      const rel3 = (await submit(env3)).body;
      const rev = await f.api('POST', `/api/v1/authorizer-keys/${keyId}/revoke`);
      expect(rev.body.status).toBe('revoked');
      const refused = await f.api('POST', '/api/v1/rollouts', { release_id: rel3.id });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatch(/key/i);
      expect((await f.api('GET', '/api/v1/authorizer-keys')).body.counts).toEqual({ active: 0, revoked: 1 });
    });

    it('lists releases, rollouts and transactions in the spec §8 shape: counts break down the whole set, limit defaults to 50 and clamps to 200', async () => {
      const all = async (url: string, key: string) => {
        const body = (await f.api('GET', `${url}${url.includes('?') ? '&' : '?'}limit=200`)).body;
        expect(body.total).toBeLessThanOrEqual(200);
        return body[key] as any[];
      };
      const tally = (items: any[], by: (x: any) => string, keys: string[] = []) => {
        const out: Record<string, number> = Object.fromEntries(keys.map((k) => [k, 0]));
        for (const x of items) out[by(x)] = (out[by(x)] ?? 0) + 1;
        return out;
      };
      const releases = await all('/api/v1/releases', 'releases');
      const rollouts = await all('/api/v1/rollouts', 'rollouts');
      const txs = await all('/api/v1/release-transactions', 'release_transactions');
      const lists: [string, string, Record<string, number>][] = [
        ['/api/v1/releases', 'releases', tally(releases, (r) => r.product)],
        ['/api/v1/rollouts', 'rollouts', tally(rollouts, (r) => r.kind, ['signed', 'legacy'])],
        // the database derives the state breakdown; each item's state is derived in the process
        ['/api/v1/release-transactions', 'release_transactions', tally(txs, (t) => t.state, ['running', 'committed', 'rolled back', 'failed'])],
      ];
      expect(new Set(txs.map((t) => t.state))).toEqual(new Set(['running', 'failed']));
      for (const [url, key, counts] of lists) {
        const first = (await f.api('GET', url)).body;
        expect(Object.keys(first), url).toEqual([key, 'total', 'limit', 'offset', 'counts']);
        expect(first, url).toMatchObject({ limit: 50, offset: 0, counts });
        expect(
          Object.values(first.counts as Record<string, number>).reduce((a, b) => a + b, 0),
          url,
        ).toBe(first.total);
        expect((await f.api('GET', `${url}?limit=500`)).body.limit, url).toBe(200);
        const page = (await f.api('GET', `${url}?limit=1&offset=1`)).body;
        expect(page[key], url).toHaveLength(1);
        expect(page.counts, url).toEqual(counts);
      }
      // a filter narrows the items and total, never the counts of the whole set
      const filtered = (await f.api('GET', '/api/v1/releases?product=no-such-product')).body;
      expect(filtered).toMatchObject({ releases: [], total: 0, counts: lists[0]![2] });
      const legacy = (await f.api('GET', '/api/v1/rollouts?kind=legacy')).body;
      expect(legacy).toMatchObject({ rollouts: [], total: 0, counts: lists[1]![2] });
      // another tenant sees none of them
      const other = await f.t.loginAs('admin', await f.t.newTenant());
      expect((await f.api('GET', '/api/v1/release-transactions', undefined, other)).body).toMatchObject({
        total: 0,
        counts: { running: 0, committed: 0, 'rolled back': 0, failed: 0 },
      });
      const foreign = (await f.api('GET', '/api/v1/releases', undefined, other)).body;
      expect([foreign.total, foreign.counts]).toEqual([0, {}]);
    });
  });
});
