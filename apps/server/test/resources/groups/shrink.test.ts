/**
 * Static groups shrink: members removed (each must be a member, the digest follows), and a group
 * deleted unless a rollout to it still runs (409 GROUP_IN_USE naming the rollout). A deleted
 * group leaves the lists, frees its name and stays named by the rollouts that targeted it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableDrivers } from '../../helpers/store.js';
import { createReleaseFixture, type ReleaseFixture } from '../../fixtures/release-flow.js';

describe.each(availableDrivers())('group member removal and group delete on %s', (driver) => {
  let f: ReleaseFixture;
  let viewer: Record<string, string>;
  let otherAdmin: Record<string, string>;
  beforeAll(async () => {
    f = await createReleaseFixture(driver);
    for (const d of ['sh-a', 'sh-b', 'sh-c']) await f.device(d);
    viewer = await f.t.loginAs('viewer');
    otherAdmin = await f.t.loginAs('admin', await f.t.newTenant());
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('removes members: the digest returns to the one of the smaller membership; audited', async () => {
    const g = (await f.api('POST', '/api/v1/groups', { name: 'shrinking', members: ['sh-a'] })).body;
    expect((await f.api('POST', `/api/v1/groups/${g.id}/members`, { devices: ['sh-b', 'sh-c'] })).status).toBe(204);
    const plain = await f.api('POST', `/api/v1/groups/${g.id}/members/remove`, { devices: ['sh-c'] });
    expect(plain.status, JSON.stringify(plain.body)).toBe(204);
    const rep = await f.api('POST', `/api/v1/groups/${g.id}/members/remove`, { devices: ['sh-b'] }, { ...f.admin, prefer: 'return=representation' });
    expect(rep.status).toBe(200);
    expect(rep.body).toMatchObject({ id: g.id, members: ['sh-a'], member_count: 1 });
    // contracts §2: the digest covers the group and its members: the same members again, the same digest
    expect(rep.body.snapshot_digest).toBe(g.snapshot_digest);
    const audit = (await f.api('GET', '/api/v1/audit?action=group.members.remove')).body.events;
    expect(audit.map((e: { target: string; detail: { removed: number } }) => [e.target, e.detail.removed])).toEqual([
      [`group:${g.id}`, 1],
      [`group:${g.id}`, 1],
    ]);
  });

  it('refuses bad removals, naming the field; viewers and other tenants are refused', async () => {
    const g = (await f.api('POST', '/api/v1/groups', { name: 'keep-shape', members: ['sh-a'] })).body;
    const url = `/api/v1/groups/${g.id}/members/remove`;
    const notMember = await f.api('POST', url, { devices: ['sh-b'] });
    expect(notMember.status).toBe(400);
    expect(notMember.body).toEqual({ error: 'devices: not a member "sh-b"' });
    const wrongType = await f.api('POST', url, { devices: 'sh-a' });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.error).toMatch(/devices/);
    const extra = await f.api('POST', url, { devices: ['sh-a'], all: true });
    expect(extra.status).toBe(400);
    expect((await f.api('POST', url, { devices: ['sh-a'] }, viewer)).status).toBe(403);
    expect((await f.api('POST', url, { devices: ['sh-a'] }, otherAdmin)).status).toBe(404);
    expect((await f.api('POST', '/api/v1/groups/not-a-uuid/members/remove', { devices: ['sh-a'] })).status).toBe(404);
    // nothing changed
    expect((await f.api('GET', `/api/v1/groups/${g.id}`)).body).toMatchObject({ members: ['sh-a'], snapshot_digest: g.snapshot_digest });
  });

  it('deletes a group: gone from the lists, its name free again, audited; viewers refused', async () => {
    const g = (await f.api('POST', '/api/v1/groups', { name: 'short-lived', members: ['sh-a', 'sh-b'] })).body;
    expect((await f.api('DELETE', `/api/v1/groups/${g.id}`, undefined, viewer)).status).toBe(403);
    expect((await f.api('DELETE', `/api/v1/groups/${g.id}`, undefined, otherAdmin)).status).toBe(404);
    const del = await f.api('DELETE', `/api/v1/groups/${g.id}`);
    expect(del.status, JSON.stringify(del.body)).toBe(204);
    expect((await f.api('GET', `/api/v1/groups/${g.id}`)).status).toBe(404);
    expect((await f.api('DELETE', `/api/v1/groups/${g.id}`)).status).toBe(404);
    expect((await f.api('POST', `/api/v1/groups/${g.id}/members`, { devices: ['sh-a'] })).status).toBe(404);
    const names = (await f.api('GET', '/api/v1/groups?limit=200')).body.groups.map((x: { name: string }) => x.name);
    expect(names).not.toContain('short-lived');
    const again = await f.api('POST', '/api/v1/groups', { name: 'short-lived' });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(g.id);
    // among live groups the name stays unique
    const twin = await f.api('POST', '/api/v1/groups', { name: 'short-lived' });
    expect(twin.status).toBe(409);
    expect(twin.body.error).toMatch(/^name: /);
    const audit = (await f.api('GET', '/api/v1/audit?action=group.delete')).body.events;
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ target: `group:${g.id}`, detail: { name: 'short-lived', members: 2 } });
  });

  it('a group targeted by a running rollout cannot be deleted (409 names the rollout); after the abort it can', async () => {
    const art = (await f.upload({ name: 'shrink-art', version: '1.0.0', kind: 'config', bytes: 'shrink bytes' })).body;
    const g = (await f.api('POST', '/api/v1/groups', { name: 'busy', members: ['sh-a', 'sh-b'] })).body;
    const start = await f.api('POST', '/api/v1/rollouts', { artifact_id: art.id, group_id: g.id });
    expect(start.status, JSON.stringify(start.body)).toBe(201);
    const rollout = start.body.id as string;

    const refused = await f.api('DELETE', `/api/v1/groups/${g.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe(`id: group ${g.id} is the target of running rollout ${rollout}; abort or finish it first`);
    expect((await f.api('GET', `/api/v1/groups/${g.id}`)).body.member_count).toBe(2);

    expect((await f.api('POST', `/api/v1/rollouts/${rollout}/abort`)).status).toBe(200);
    expect((await f.api('DELETE', `/api/v1/groups/${g.id}`)).status).toBe(204);
    // the rollout keeps naming its group; a new rollout to it is refused
    expect((await f.api('GET', `/api/v1/rollouts/${rollout}`)).body).toMatchObject({ group_id: g.id, status: 'aborted' });
    const late = await f.api('POST', '/api/v1/rollouts', { artifact_id: art.id, group_id: g.id });
    expect(late.status).toBe(400);
    expect(late.body.error).toMatch(/^group_id/);
  });
});
