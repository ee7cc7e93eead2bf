/**
 * The catalogue lists (artifacts, registries, groups, authorizer keys): spec §8 page clamp and
 * default, `total` over the filtered set and `counts` over the tenant's whole set; and the
 * updates that answer 204, or 200 with the representation under `Prefer: return=representation`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableDrivers } from '../helpers/store.js';
import { createReleaseFixture, newAuthorizer, type ReleaseFixture } from '../fixtures/release-flow.js';

const PREFER = { prefer: 'return=representation' };

describe.each(availableDrivers())('catalogue lists and updates on %s', (driver) => {
  let f: ReleaseFixture;
  let otherAdmin: Record<string, string>;
  beforeAll(async () => {
    f = await createReleaseFixture(driver);
    for (const d of ['cat-a', 'cat-b']) await f.device(d);
    const other = await f.t.newTenant();
    otherAdmin = await f.t.loginAs('admin', other);
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('artifacts: total counts the filter, counts every kind of the whole tenant', async () => {
    for (const [name, kind] of [
      ['m1', 'model'],
      ['m2', 'model'],
      ['c1', 'config'],
    ] as const) {
      expect((await f.upload({ name, version: '1.0.0', kind, bytes: `${name} bytes` })).status).toBe(201);
    }
    // another tenant's artifact is in neither its total nor its counts
    expect((await f.upload({ name: 'm9', version: '1.0.0', kind: 'model', bytes: 'x' }, otherAdmin)).status).toBe(201);
    const all = await f.api('GET', '/api/v1/artifacts');
    expect(all.body.total).toBe(3);
    expect(all.body.counts).toEqual({
      container: 0,
      model: 2,
      config: 1,
      'service-binary': 0,
      'os-bundle': 0,
      'maintenance-window': 0,
      'min-agent': 0,
      compose: 0,
      'os-package': 0,
      'package-manager': 0,
    });
    const models = await f.api('GET', '/api/v1/artifacts?kind=model&limit=1');
    expect(models.body).toMatchObject({ total: 2, limit: 1, offset: 0 });
    expect(models.body.artifacts).toHaveLength(1);
    expect(models.body.counts).toEqual(all.body.counts);
    const q = await f.api('GET', '/api/v1/artifacts?q=c1');
    expect(q.body.total).toBe(1);
    expect(q.body.counts).toEqual(all.body.counts);
  });

  it('registries: counts by scheme and by credentials reference', async () => {
    for (const body of [
      { name: 'hub', url: 'https://registry.example.com' },
      { name: 'private', url: 'https://private.example.com', credentials_ref: 'env:PRIVATE_REGISTRY' },
      { name: 'local', url: 'http://127.0.0.1:5000' },
    ]) {
      f.t.clock.advance(1000); // the list is oldest first
      expect((await f.api('POST', '/api/v1/registries', body)).status).toBe(201);
    }
    expect((await f.api('POST', '/api/v1/registries', { name: 'elsewhere', url: 'http://127.0.0.1:5001' }, otherAdmin)).status).toBe(201);
    const list = await f.api('GET', '/api/v1/registries?limit=2');
    expect(list.body).toMatchObject({ total: 3, limit: 2, offset: 0, counts: { https: 2, http: 1, authenticated: 1, anonymous: 2 } });
    expect(list.body.registries.map((r: { name: string }) => r.name)).toEqual(['hub', 'private']);
  });

  it('groups: counts empty and populated groups', async () => {
    for (const body of [{ name: 'none' }, { name: 'both', members: ['cat-a', 'cat-b'] }, { name: 'one', members: ['cat-a'] }]) {
      f.t.clock.advance(1000); // the list is oldest first
      expect((await f.api('POST', '/api/v1/groups', body)).status).toBe(201);
    }
    expect((await f.api('POST', '/api/v1/groups', { name: 'theirs' }, otherAdmin)).status).toBe(201);
    const list = await f.api('GET', '/api/v1/groups');
    expect(list.body).toMatchObject({ total: 3, limit: 50, offset: 0, counts: { empty: 1, populated: 2 } });
    // list rows carry no member names; the count is exact
    expect(list.body.groups.map((g: { name: string; members: string[]; member_count: number }) => [g.name, g.members, g.member_count])).toEqual([
      ['none', [], 0],
      ['both', [], 2],
      ['one', [], 1],
    ]);
  });

  it.each(['artifacts', 'registries', 'groups', 'authorizer-keys'])('%s: limit defaults to 50 and is clamped to 200', async (collection) => {
    expect((await f.api('GET', `/api/v1/${collection}`)).body).toMatchObject({ limit: 50, offset: 0 });
    expect((await f.api('GET', `/api/v1/${collection}?limit=500&offset=1`)).body).toMatchObject({ limit: 200, offset: 1 });
  });

  it('PATCH /artifacts/{id}: 204 without a body; 200 with the artifact when the client prefers it', async () => {
    const a = (await f.upload({ name: 'patched', version: '1.0.0', kind: 'config', bytes: 'conf' })).body;
    const plain = await f.api('PATCH', `/api/v1/artifacts/${a.id}`, { description: 'first' });
    expect(plain.status).toBe(204);
    expect(plain.raw.length).toBe(0);
    expect(plain.headers['preference-applied']).toBeUndefined();
    expect((await f.api('GET', `/api/v1/artifacts/${a.id}`)).body.description).toBe('first');

    const rep = await f.api('PATCH', `/api/v1/artifacts/${a.id}`, { labels: { team: 'edge' } }, { ...f.admin, ...PREFER });
    expect(rep.status).toBe(200);
    expect(rep.headers['preference-applied']).toBe('return=representation');
    expect(rep.body).toMatchObject({ id: a.id, description: 'first', labels: { team: 'edge' } });
    expect((await f.api('GET', `/api/v1/artifacts/${a.id}`)).body).toEqual(rep.body);

    // a refusal is the same either way
    const refused = await f.api('PATCH', `/api/v1/artifacts/${a.id}`, { kind: 'model' }, { ...f.admin, ...PREFER });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('kind: is immutable once published');
  });

  it('POST /groups/{id}/members: 204 without a body; 200 with the group when the client prefers it', async () => {
    await f.device('cat-c');
    const g = (await f.api('POST', '/api/v1/groups', { name: 'growing', members: ['cat-a'] })).body;
    const plain = await f.api('POST', `/api/v1/groups/${g.id}/members`, { devices: ['cat-b'] });
    expect(plain.status).toBe(204);
    expect(plain.raw.length).toBe(0);
    const after = (await f.api('GET', `/api/v1/groups/${g.id}`)).body;
    expect(after).toMatchObject({ members: ['cat-a', 'cat-b'], member_count: 2 });
    expect(after.snapshot_digest).not.toBe(g.snapshot_digest);

    const rep = await f.api('POST', `/api/v1/groups/${g.id}/members`, { devices: ['cat-c'] }, { ...f.admin, ...PREFER });
    expect(rep.status).toBe(200);
    expect(rep.headers['preference-applied']).toBe('return=representation');
    expect(rep.body).toMatchObject({ id: g.id, members: ['cat-a', 'cat-b', 'cat-c'], member_count: 3 });
    expect((await f.api('GET', `/api/v1/groups/${g.id}`)).body).toEqual(rep.body);

    expect((await f.api('POST', `/api/v1/groups/${g.id}/members`, { devices: ['cat-a'] }, otherAdmin)).status).toBe(404);
  });

  it('authorizer keys: counts active and revoked over the whole tenant', async () => {
    const ids: string[] = [];
    for (const name of ['k1', 'k2', 'k3']) ids.push((await f.api('POST', '/api/v1/authorizer-keys', { name, public_key_pem: newAuthorizer().pem })).body.id);
    expect((await f.api('DELETE', `/api/v1/authorizer-keys/${ids[0]}`)).status).toBe(200);
    expect((await f.api('POST', '/api/v1/authorizer-keys', { name: 'theirs', public_key_pem: newAuthorizer().pem }, otherAdmin)).status).toBe(201);
    expect((await f.api('GET', '/api/v1/authorizer-keys?limit=1')).body).toMatchObject({ total: 3, limit: 1, counts: { active: 2, revoked: 1 } });
  });
});
