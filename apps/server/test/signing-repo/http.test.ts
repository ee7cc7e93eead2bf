import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { newFastify } from '../../src/http/fastify.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signingRepoRoutes } from '../../src/signing-repo/index.js';
import { availableDrivers } from '../helpers/store.js';
import { createRepoFixture, type RepoFixture } from '../fixtures/signing-repo.js';

describe.each(availableDrivers())('signing repository HTTP routes on %s', (driver) => {
  let f: RepoFixture;
  let app: FastifyInstance;
  let otherTenant: string;
  const payload = Buffer.from(Array.from({ length: 10_000 }, (_, i) => (i * 7) % 256));
  const hex = createHash('sha256').update(payload).digest('hex');
  const targetUrl = (tenant: string) => `/tuf/${tenant}/targets/artifacts/app/2.0/${hex}.app.tar`;

  beforeAll(async () => {
    f = await createRepoFixture(driver);
    otherTenant = await f.newTenant();
    await f.repo.ensureTenantRepo(otherTenant);
    await f.repo.publishTargetStream(
      f.tenantId,
      { path: 'artifacts/app/2.0/app.tar', custom: { media_type: 'application/vnd.oci.image.layer.v1.tar' } },
      Readable.from([payload]),
    );
    app = newFastify();
    await app.register(signingRepoRoutes, { repo: f.repo, permission: 'public' });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await f?.dispose();
  });

  it('serves metadata as JSON with a strong ETag; versioned files are immutable, timestamp is not', async () => {
    const ts = await app.inject(`/tuf/${f.tenantId}/metadata/timestamp.json`);
    expect(ts.statusCode).toBe(200);
    expect(ts.headers['content-type']).toBe('application/json');
    expect(ts.headers['cache-control']).toBe('no-cache');
    expect(ts.headers['etag']).toBe(`"${createHash('sha256').update(ts.rawPayload).digest('hex')}"`);
    expect(JSON.parse(ts.body).signed._type).toBe('timestamp');

    const root = await app.inject(`/tuf/${f.tenantId}/metadata/1.root.json`);
    expect(root.statusCode).toBe(200);
    expect(root.headers['cache-control']).toContain('immutable');
    expect(JSON.parse(root.body).signed.version).toBe(1);

    const again = await app.inject({ url: `/tuf/${f.tenantId}/metadata/1.root.json`, headers: { 'if-none-match': String(root.headers['etag']) } });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
  });

  it('serves targets by hash-prefixed name with their media type, whole or by range', async () => {
    const whole = await app.inject(targetUrl(f.tenantId));
    expect(whole.statusCode).toBe(200);
    expect(whole.rawPayload.equals(payload)).toBe(true);
    expect(whole.headers['content-type']).toBe('application/vnd.oci.image.layer.v1.tar');
    expect(whole.headers['etag']).toBe(`"${hex}"`);
    expect(whole.headers['accept-ranges']).toBe('bytes');
    expect(whole.headers['content-length']).toBe(String(payload.length));

    const part = await app.inject({ url: targetUrl(f.tenantId), headers: { range: 'bytes=100-199' } });
    expect(part.statusCode).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 100-199/${payload.length}`);
    expect(part.headers['content-length']).toBe('100');
    expect(part.rawPayload.equals(payload.subarray(100, 200))).toBe(true);

    const tail = await app.inject({ url: targetUrl(f.tenantId), headers: { range: 'bytes=-10' } });
    expect(tail.statusCode).toBe(206);
    expect(tail.rawPayload.equals(payload.subarray(payload.length - 10))).toBe(true);

    const metaRange = await app.inject({ url: `/tuf/${f.tenantId}/metadata/1.root.json`, headers: { range: 'bytes=0-0' } });
    expect(metaRange.statusCode).toBe(206);
    expect(metaRange.body).toBe('{');
  });

  it.each(['bytes=20000-', 'bytes=5-1', 'bytes=0-1,4-5', 'lines=1-2'])('answers 416 to Range %s', async (range) => {
    const res = await app.inject({ url: targetUrl(f.tenantId), headers: { range } });
    expect(res.statusCode).toBe(416);
    expect(res.headers['content-range']).toBe(`bytes */${payload.length}`);
    expect(JSON.parse(res.body).error).toMatch(/^range: /);
  });

  it.each([
    ['another tenant cannot fetch the target', (t: string, o: string) => targetUrl(o)],
    ['the plain (non-hashed) name', (t: string) => `/tuf/${t}/targets/artifacts/app/2.0/app.tar`],
    ['a wrong hash', (t: string) => `/tuf/${t}/targets/artifacts/app/2.0/${'0'.repeat(64)}.app.tar`],
    ['path traversal', (t: string) => `/tuf/${t}/targets/../../${hex}.app.tar`],
    ['encoded traversal', (t: string) => `/tuf/${t}/targets/artifacts/%2e%2e/${hex}.app.tar`],
    ['a bad tenant id', () => `/tuf/not-a-uuid/metadata/timestamp.json`],
    ['a missing metadata version', (t: string) => `/tuf/${t}/metadata/99.root.json`],
    ['a non-TUF metadata name', (t: string) => `/tuf/${t}/metadata/keys.json`],
  ])('404 for %s', async (_name, url) => {
    const res = await app.inject(url(f.tenantId, otherTenant));
    expect(res.statusCode).toBe(404);
    // (A normalized `..` URL misses the route entirely: fastify's own 404, also fine.)
    expect(JSON.parse(res.body).error).toMatch(/not found/i);
  });

  it('answers 404 when authorizeTenant refuses, and declares its permission on every route', async () => {
    const guarded = newFastify();
    const seen: unknown[] = [];
    guarded.addHook('onRoute', (r) => {
      if (r.method === 'GET') seen.push(r.config);
    });
    await guarded.register(signingRepoRoutes, { repo: f.repo, authorizeTenant: (_req, tenant) => tenant !== f.tenantId });
    await guarded.ready();
    expect(seen).toEqual([{ permission: 'artifacts.read' }, { permission: 'artifacts.read' }]);
    expect((await guarded.inject(`/tuf/${f.tenantId}/metadata/timestamp.json`)).statusCode).toBe(404);
    expect((await guarded.inject(`/tuf/${otherTenant}/metadata/timestamp.json`)).statusCode).toBe(200);
    await guarded.close();
  });
});
