/**
 * Registry browse and import against a REAL local registry (Debian's `docker-registry`,
 * distribution 2.8) with filesystem storage in a temp dir on 127.0.0.1 port 0. The image is
 * pushed with plain OCI distribution API calls.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pushImage, registryAvailable, sha, startRegistry } from '../../helpers/oci-registry.js';
import { createReleaseFixture, untar, type ReleaseFixture } from '../../fixtures/release-flow.js';

describe.skipIf(!registryAvailable())('registries against a real docker-registry', () => {
  let f: ReleaseFixture;
  let dir: string;
  let reg: { url: string; proc: ChildProcess };
  let manifest: Buffer;
  const layer = Buffer.from('pretend this is a gzip layer '.repeat(1000));
  const config = Buffer.from(JSON.stringify({ architecture: 'arm64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] } }));

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-registry-'));
    reg = await startRegistry(dir);
    f = await createReleaseFixture('pglite');
    manifest = await pushImage(reg.url, 'team/app', '1.4.0', layer, config);
  });
  afterAll(async () => {
    reg?.proc.kill('SIGTERM');
    await f?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('creates and lists registries; refuses credentials in the URL', async () => {
    const bad = await f.api('POST', '/api/v1/registries', { name: 'bad', url: 'http://user:pw@127.0.0.1:1' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/^url: must not carry credentials/);
    const r = await f.api('POST', '/api/v1/registries', { name: 'local', url: reg.url });
    expect(r.status).toBe(201);
    expect((await f.api('GET', '/api/v1/registries')).body).toMatchObject({ total: 1, registries: [{ name: 'local', url: reg.url }] });
  });

  it('browses tags and imports an image into a signed container artifact (OCI layout tar)', async () => {
    const id = (await f.api('GET', '/api/v1/registries')).body.registries[0].id;
    expect((await f.api('GET', `/api/v1/registries/${id}/tags?repository=team/app`)).body).toEqual({ repository: 'team/app', tags: ['1.4.0'] });
    expect((await f.api('GET', `/api/v1/registries/${id}/tags?repository=Bad..Name`)).status).toBe(400);
    const missing = await f.api('GET', `/api/v1/registries/${id}/tags?repository=team/none`);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatch(/answered 404/);

    const imp = await f.api('POST', `/api/v1/registries/${id}/import`, { repository: 'team/app', tag: '1.4.0' });
    expect(imp.status, JSON.stringify(imp.body)).toBe(201);
    expect(imp.body).toMatchObject({
      name: 'app',
      version: '1.4.0',
      kind: 'container',
      media_type: 'application/vnd.oci.image.layout.v1+tar',
      source: `registry:${id}`,
    });
    expect((await f.repo.getTargetInfo(f.t.tenantId, imp.body.target))?.digest).toBe(imp.body.digest);

    // the stored artifact is an OCI layout holding exactly the registry's bytes
    const { stream } = await f.repo.blobs.get(imp.body.digest);
    const files = await untar(stream);
    expect(files.get(`blobs/sha256/${sha(manifest).slice(7)}`)!.equals(manifest)).toBe(true);
    expect(files.get(`blobs/sha256/${sha(layer).slice(7)}`)!.equals(layer)).toBe(true);
    expect(JSON.parse(files.get('index.json')!.toString()).manifests[0].digest).toBe(sha(manifest));
    // importing the same tag again is a duplicate version
    expect((await f.api('POST', `/api/v1/registries/${id}/import`, { repository: 'team/app', tag: '1.4.0' })).status).toBe(409);
  });
});
