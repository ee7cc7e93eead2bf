/**
 * Dynamic groups (docs/publish-and-deploy.md "Dynamic groups"): a group defined by a device filter whose
 * members follow the fleet at creation, at each refresh and at every rollout start, where they
 * are frozen into the deployment under the group lock. A signed rollout starts only when that
 * membership is the one the customer signed (GROUP_CHANGED otherwise, changing nothing);
 * static groups keep their explicit members.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableDrivers } from '../../helpers/store.js';
import { createReleaseFixture, newAuthorizer, releasePayload, sign, type ReleaseFixture } from '../../fixtures/release-flow.js';

describe.each(availableDrivers())('dynamic groups on %s', (driver) => {
  let f: ReleaseFixture;
  let viewer: Record<string, string>;
  let arts: { id: string; name: string; version: string; kind: string; target: string; digest: string; length: number; media_type: string }[];
  let auth: ReturnType<typeof newAuthorizer>;
  const db = () => f.t.testStore.store.db;
  const tag = (name: string, t: string) => f.api('PUT', `/api/v1/devices/${name}/tags/${t}`);
  const setModel = (name: string, model: string) =>
    db()
      .updateTable('devices')
      .set({ inventory: JSON.stringify({ attributes: { hw_model: model }, custom: {}, members: [] }) })
      .where('tenant_id', '=', f.t.tenantId)
      .where('name', '=', name)
      .execute();
  /** The devices the deployment of rollout `rolloutId` bound at its start. */
  const deploymentDevices = async (rolloutId: string) =>
    (
      await db()
        .selectFrom('deployment_devices as dd')
        .innerJoin('rollouts as r', 'r.deployment_id', 'dd.deployment_id')
        .select('dd.device_name')
        .where('r.id', '=', rolloutId)
        .orderBy('dd.device_name')
        .execute()
    ).map((r) => r.device_name);

  beforeAll(async () => {
    f = await createReleaseFixture(driver);
    for (const d of ['dy-a', 'dy-b', 'dy-c', 'dy-d']) await f.device(d);
    await setModel('dy-a', 'gw-3');
    await setModel('dy-b', 'gw-3');
    await setModel('dy-c', 'gw-4');
    viewer = await f.t.loginAs('viewer');
    arts = [(await f.upload({ name: 'dy-conf', version: '1.0.0', kind: 'config', bytes: 'conf' })).body];
    auth = newAuthorizer();
    await f.api('POST', '/api/v1/authorizer-keys', { name: 'k', public_key_pem: auth.pem });
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('a dynamic group has what its filter selects; refresh follows the fleet, audited; an unchanged fleet keeps its digest', async () => {
    const g = await f.api('POST', '/api/v1/groups', { name: 'eu-gw3', filter: 'attributes.hw_model = "gw-3" and tags has "eu"' });
    expect(g.status, JSON.stringify(g.body)).toBe(201);
    expect(g.body).toMatchObject({ filter: 'attributes.hw_model = "gw-3" and tags has "eu"', members: [], member_count: 0 });
    await tag('dy-a', 'eu');
    await tag('dy-c', 'eu');
    // the fleet changed; the stored snapshot is the one of the last refresh until the next
    expect((await f.api('GET', `/api/v1/groups/${g.body.id}`)).body.members).toEqual([]);
    const r = await f.api('POST', `/api/v1/groups/${g.body.id}/refresh`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ added: 1, removed: 0 });
    const after = (await f.api('GET', `/api/v1/groups/${g.body.id}`)).body;
    expect(after).toMatchObject({ members: ['dy-a'], member_count: 1, snapshot_digest: r.body.snapshot_digest });
    // the same members in a static group of the same id would hash the same: compare with a fresh refresh of an unchanged fleet
    expect((await f.api('POST', `/api/v1/groups/${g.body.id}/refresh`)).body).toMatchObject({ added: 0, removed: 0, snapshot_digest: after.snapshot_digest });
    await f.api('DELETE', '/api/v1/devices/dy-a/tags/eu');
    await tag('dy-b', 'eu');
    expect((await f.api('POST', `/api/v1/groups/${g.body.id}/refresh`)).body).toMatchObject({ added: 1, removed: 1 });
    expect((await f.api('GET', `/api/v1/groups/${g.body.id}`)).body.members).toEqual(['dy-b']);
    const audit = (await f.api('GET', '/api/v1/audit?action=group.refresh')).body.events;
    expect(audit.map((e: { detail: { added: number; removed: number } }) => [e.detail.added, e.detail.removed])).toEqual([
      [1, 1],
      [0, 0],
      [1, 0],
    ]);
  });

  it('refusals: a bad filter names filter and its column; filter with members; member changes and refresh of the wrong kind; viewers', async () => {
    const bad = await f.api('POST', '/api/v1/groups', { name: 'bad', filter: 'tags has' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('filter: column 9: expected a value ("text" or a number) after has, found the end');
    const both = await f.api('POST', '/api/v1/groups', { name: 'both', filter: 'tags has "eu"', members: ['dy-a'] });
    expect(both.status).toBe(400);
    expect(both.body.error).toMatch(/^members: /);
    const dyn = (await f.api('POST', '/api/v1/groups', { name: 'all-eu', filter: 'tags has "eu"' })).body;
    const add = await f.api('POST', `/api/v1/groups/${dyn.id}/members`, { devices: ['dy-d'] });
    expect(add.status).toBe(400);
    expect(add.body.error).toMatch(/^id: group .* is dynamic/);
    expect((await f.api('POST', `/api/v1/groups/${dyn.id}/members/remove`, { devices: ['dy-b'] })).status).toBe(400);
    const stat = (await f.api('POST', '/api/v1/groups', { name: 'static-one', members: ['dy-d'] })).body;
    expect(stat.filter).toBeNull();
    expect((await f.api('POST', `/api/v1/groups/${stat.id}/refresh`)).body.error).toMatch(/is static/);
    expect((await f.api('POST', `/api/v1/groups/${dyn.id}/refresh`, undefined, viewer)).status).toBe(403);
    expect((await f.api('POST', '/api/v1/groups/not-a-uuid/refresh')).status).toBe(404);
    const names = (await f.api('GET', '/api/v1/groups?limit=200')).body.groups.map((x: { name: string }) => x.name);
    expect(names).not.toContain('bad');
    expect(names).not.toContain('both');
  });

  it('a signed rollout binds the membership the customer signed: a fleet change since is GROUP_CHANGED and changes nothing; the start freezes the members', async () => {
    await tag('dy-d', 'line1');
    const g = (await f.api('POST', '/api/v1/groups', { name: 'line1', filter: 'tags has "line1"' })).body;
    expect(g.members).toEqual(['dy-d']);
    const env = sign(releasePayload({ tenant: f.t.tenantId, artifacts: arts, group: g, version: '1.0.0' }), auth.key);
    const rel = await f.api('POST', '/api/v1/releases', { envelope: env, expected_product: 'edge-gateway' });
    expect(rel.status, JSON.stringify(rel.body)).toBe(201);
    // the fleet moves after the customer signed: the start sees a different membership
    await tag('dy-c', 'line1');
    const refused = await f.api('POST', '/api/v1/rollouts', { release_id: rel.body.id });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatch(/GROUP_CHANGED|target_policy_digest|snapshot/);
    // refused whole: the refresh inside the start rolled back with it
    expect((await f.api('GET', `/api/v1/groups/${g.id}`)).body).toMatchObject({ members: ['dy-d'], snapshot_digest: g.snapshot_digest });
    // back to the signed membership: the start succeeds and its devices are frozen
    await f.api('DELETE', '/api/v1/devices/dy-c/tags/line1');
    const start = await f.api('POST', '/api/v1/rollouts', { release_id: rel.body.id });
    expect(start.status, JSON.stringify(start.body)).toBe(201);
    expect(await deploymentDevices(start.body.id)).toEqual(['dy-d']);
    await tag('dy-a', 'line1');
    expect((await f.api('POST', `/api/v1/groups/${g.id}/refresh`)).body).toMatchObject({ added: 1 });
    // the running deployment keeps the snapshot it bound
    expect(await deploymentDevices(start.body.id)).toEqual(['dy-d']);
  });

  it('a legacy rollout to a dynamic group reaches what the filter selects at its start', async () => {
    await tag('dy-b', 'legacy1');
    await tag('dy-c', 'legacy1');
    const g = (await f.api('POST', '/api/v1/groups', { name: 'legacy1', filter: 'tags has "legacy1" and attributes.hw_model = "gw-4"' })).body;
    expect(g.members).toEqual(['dy-c']);
    await setModel('dy-b', 'gw-4');
    const start = await f.api('POST', '/api/v1/rollouts', { artifact_id: arts[0]!.id, group_id: g.id });
    expect(start.status, JSON.stringify(start.body)).toBe(201);
    expect((await f.api('GET', `/api/v1/groups/${g.id}`)).body.members).toEqual(['dy-b', 'dy-c']);
  });
});
