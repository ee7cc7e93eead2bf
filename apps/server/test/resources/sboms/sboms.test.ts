/**
 * SBOM attach: CycloneDX 1.4-1.6 and SPDX 2.3 JSON validated against the official schemas
 * (a 400 naming the first bad path), bounded by SERVER_LIMITS.sboms, SPDX 3.0 refused; and an SBOM an
 * image carries as an OCI referrer attached on registry import (a REAL docker-registry).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cyclonedx } from '../../helpers/feeds.js';
import { pushBlob, pushImage, registryAvailable, sha, startRegistry } from '../../helpers/oci-registry.js';
import { createReleaseFixture, type ReleaseFixture } from '../../fixtures/release-flow.js';
import { SERVER_LIMITS } from '../../../src/limits.js';

const CDX = 'application/vnd.cyclonedx+json';
const SPDX = 'application/spdx+json';

const spdx = (packages: unknown[], over: Record<string, unknown> = {}) =>
  JSON.stringify({
    spdxVersion: 'SPDX-2.3',
    dataLicense: 'CC0-1.0',
    SPDXID: 'SPDXRef-DOCUMENT',
    name: 'app',
    documentNamespace: 'https://example.com/spdx/app-1',
    creationInfo: { created: '2024-01-01T00:00:00Z', creators: ['Tool: test'] },
    packages,
    ...over,
  });

describe('SBOM attach', () => {
  let f: ReleaseFixture;
  let id: string;
  const put = (body: string | Buffer, type = CDX) =>
    f.t.app.inject({ method: 'PUT', url: `/api/v1/artifacts/${id}/sbom`, headers: { ...f.admin, 'content-type': type }, payload: body });
  const err = async (body: string | Buffer, type = CDX) => {
    const r = await put(body, type);
    expect(r.statusCode, r.body).toBe(400);
    return JSON.parse(r.body).error as string;
  };

  beforeAll(async () => {
    f = await createReleaseFixture('pglite');
    id = (await f.upload({ name: 'sbom-target', version: '1.0.0', kind: 'config', bytes: 'x' })).body.id;
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('accepts CycloneDX 1.4, 1.5 and 1.6 and indexes nested components', async () => {
    for (const v of ['1.4', '1.5', '1.6']) {
      const r = await put(cyclonedx(['pkg:npm/a@1.0.0', 'pkg:pypi/b@2.0'], v));
      expect(r.statusCode, r.body).toBe(200);
      expect(JSON.parse(r.body)).toMatchObject({ format: 'cyclonedx', spec_version: v, components: 2 });
    }
    const nested = JSON.stringify({
      bomFormat: 'CycloneDX',
      specVersion: '1.6',
      components: [
        { type: 'application', name: 'outer', version: '1', components: [{ type: 'library', name: 'inner', version: '2', purl: 'pkg:npm/inner@2' }] },
      ],
    });
    expect(JSON.parse((await put(nested)).body).components).toBe(2);
    const c = (await f.api('GET', `/api/v1/artifacts/${id}/components`)).body;
    expect(c.components.map((x: any) => x.purl)).toEqual(['pkg:generic/outer@1', 'pkg:npm/inner@2']);
  });

  it('accepts SPDX 2.3 JSON, reading purls, licenses and checksums', async () => {
    const doc = spdx([
      {
        SPDXID: 'SPDXRef-a',
        name: 'openssl',
        versionInfo: '3.0.11-1',
        downloadLocation: 'NOASSERTION',
        licenseConcluded: 'Apache-2.0',
        checksums: [{ algorithm: 'SHA256', checksumValue: 'b'.repeat(64) }],
        externalRefs: [{ referenceCategory: 'PACKAGE-MANAGER', referenceType: 'purl', referenceLocator: 'pkg:deb/debian/openssl@3.0.11-1?distro=debian-12' }],
      },
      { SPDXID: 'SPDXRef-b', name: 'no-purl', versionInfo: '1.0', downloadLocation: 'NOASSERTION' },
    ]);
    const r = await put(doc, SPDX);
    expect(r.statusCode, r.body).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ format: 'spdx', spec_version: 'SPDX-2.3', components: 2 });
    const c = (await f.api('GET', `/api/v1/artifacts/${id}/components`)).body.components;
    expect(c[0]).toMatchObject({
      purl: 'pkg:deb/debian/openssl@3.0.11-1?distro=debian-12',
      ecosystem: 'Debian',
      release: '12',
      licenses: ['Apache-2.0'],
      hashes: { SHA256: 'b'.repeat(64) },
    });
    expect(c[1]).toMatchObject({ purl: 'pkg:generic/no-purl@1.0', package_key: 'purl:pkg:generic/no-purl' });
  });

  it('refuses what the schemas refuse, naming the first bad path; and what is over the caps', async () => {
    expect(await err(JSON.stringify({ bomFormat: 'CycloneDX', specVersion: '1.6', components: [{ type: 'widget', name: 'x' }] }))).toBe(
      'components[0].type: must be one of "application", "framework", "library", "container", "platform", "operating-system", "device", "device-driver", "firmware", "file", "machine-learning-model", "data", "cryptographic-asset"',
    );
    expect(await err(JSON.stringify({ bomFormat: 'CycloneDX', specVersion: '1.6', components: [{ type: 'library' }] }))).toBe(
      'components[0].name: is required',
    );
    expect(await err(JSON.stringify({ bomFormat: 'CycloneDX', specVersion: '1.3' }))).toBe('specVersion: must be one of 1.4, 1.5, 1.6');
    expect(await err(JSON.stringify({ bomFormat: 'SPDX', specVersion: '1.6' }))).toBe('bomFormat: must be "CycloneDX"');
    expect(await err(cyclonedx(['pkg:npm/a@1']).replace('pkg:npm/a@1', 'not-a-purl'))).toMatch(/^components\[0\]\.purl: not a package URL/);
    expect(await err(spdx([{ SPDXID: 'SPDXRef-a', downloadLocation: 'NOASSERTION' }]), SPDX)).toBe('packages[0].name: is required');
    expect(
      await err(
        spdx([
          {
            SPDXID: 'SPDXRef-a',
            name: 'a',
            downloadLocation: 'NOASSERTION',
            externalRefs: [{ referenceCategory: 'PACKAGE-MANAGER', referenceType: 'purl', referenceLocator: 'pkg:' }],
          },
        ]),
        SPDX,
      ),
    ).toMatch(/^packages\[0\]\.externalRefs\[0\]\.referenceLocator: not a package URL/);
    expect(await err(JSON.stringify({ spdxVersion: 'SPDX-2.3', name: 'x' }), SPDX)).toBe('SPDXID: is required');
    expect(await err(spdx([], { spdxVersion: 'SPDX-3.0' }), SPDX)).toMatch(/^spdxVersion: SPDX 3.0 \(JSON-LD\) is not supported/);
    expect(await err(JSON.stringify({ '@context': 'https://spdx.org/rdf/3.0.1/spdx-context.jsonld', '@graph': [] }), SPDX)).toMatch(/SPDX 3.0/);
    expect(await err('{"bomFormat": "CycloneDX"')).toBe('body: not UTF-8 JSON');
    expect(await err(Buffer.from([0xff, 0xfe, 0x7b, 0x7d]))).toBe('body: not UTF-8 JSON');
    const many = cyclonedx(Array.from({ length: SERVER_LIMITS.sboms.maxComponents + 1 }, (_, i) => `pkg:npm/p${i}@1.0.0`));
    expect(await err(many)).toBe(`components: more than ${SERVER_LIMITS.sboms.maxComponents} components`);
    const big = await put(Buffer.alloc(SERVER_LIMITS.sboms.maxBytes + 1, 0x20));
    expect(big.statusCode).toBe(400);
    // nothing of the refused documents stuck: the last good one is still there
    expect((await f.api('GET', `/api/v1/artifacts/${id}/components`)).body.total).toBe(2);
  });
});

describe.skipIf(!registryAvailable())('an SBOM carried as an OCI referrer (real docker-registry)', () => {
  let f: ReleaseFixture;
  let dir: string;
  let reg: { url: string; proc: ChildProcess };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-registry-'));
    reg = await startRegistry(dir);
    f = await createReleaseFixture('pglite');
  });
  afterAll(async () => {
    reg?.proc.kill('SIGTERM');
    await f?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Pushes an SBOM artifact manifest whose subject is the image, and the referrers tag index naming it. */
  async function pushSbomReferrer(repo: string, image: Buffer, sbom: Buffer): Promise<void> {
    const empty = Buffer.from('{}');
    await pushBlob(reg.url, repo, empty);
    await pushBlob(reg.url, repo, sbom);
    const artifact = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        artifactType: CDX,
        config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: sha(empty), size: empty.length },
        layers: [{ mediaType: CDX, digest: sha(sbom), size: sbom.length }],
        subject: { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: sha(image), size: image.length },
      }),
    );
    const put = await fetch(`${reg.url}/v2/${repo}/manifests/${sha(artifact)}`, {
      method: 'PUT',
      body: artifact,
      headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
    });
    expect(put.status, await put.text()).toBe(201);
    const index = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.index.v1+json',
        manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: sha(artifact), size: artifact.length, artifactType: CDX }],
      }),
    );
    const tag = await fetch(`${reg.url}/v2/${repo}/manifests/${sha(image).replace(':', '-')}`, {
      method: 'PUT',
      body: index,
      headers: { 'content-type': 'application/vnd.oci.image.index.v1+json' },
    });
    expect(tag.status, await tag.text()).toBe(201);
  }

  it('attaches the referrer SBOM on import (and its findings follow); an image without one imports without', async () => {
    const config = Buffer.from(JSON.stringify({ architecture: 'arm64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] } }));
    const image = await pushImage(reg.url, 'team/with-sbom', '1.0.0', Buffer.from('layer one'), config);
    await pushSbomReferrer('team/with-sbom', image, Buffer.from(cyclonedx(['pkg:npm/lodash@4.17.20'])));
    await pushImage(reg.url, 'team/plain', '1.0.0', Buffer.from('layer two'), config);
    const r = (await f.api('POST', '/api/v1/registries', { name: 'local', url: reg.url })).body;
    const withSbom = await f.api('POST', `/api/v1/registries/${r.id}/import`, { repository: 'team/with-sbom', tag: '1.0.0' });
    expect(withSbom.status, JSON.stringify(withSbom.body)).toBe(201);
    expect(withSbom.body.has_sbom).toBe(true);
    expect((await f.api('GET', `/api/v1/artifacts/${withSbom.body.id}/components`)).body.components.map((c: any) => c.purl)).toEqual([
      'pkg:npm/lodash@4.17.20',
    ]);
    const plain = await f.api('POST', `/api/v1/registries/${r.id}/import`, { repository: 'team/plain', tag: '1.0.0' });
    expect(plain.status).toBe(201);
    expect(plain.body.has_sbom).toBe(false);
  });
});
