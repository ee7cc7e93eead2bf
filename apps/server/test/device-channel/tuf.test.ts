/**
 * The server side of TUF over the device channel: RepositoryService.GetFile serves a tenant's
 * TUF metadata and its hash-prefixed targets, over mTLS, to a tuf-js Updater (the TUF client
 * devices run) whose fetcher maps its URLs to GetFile paths. tuf-js checks every signature,
 * version, length and hash; the server only has to serve the right bytes under the right names.
 */
import 'reflect-metadata';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status, type ServiceError } from '@grpc/grpc-js';
import type { EnrollResponse, GetFileResponse, RepositoryServiceClient } from '@svc/device-proto';
import { digestHex, encodePem, hashedTargetPath, sha256Digest, type Digest } from '@svc/release-core';
import { BaseFetcher, Updater } from 'tuf-js';
import { DownloadHTTPError } from 'tuf-js/dist/error.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FsBlobStore } from '../../src/blobs/index.js';
import { availableDrivers } from '../helpers/store.js';
import {
  channelCredentials,
  clientsFor,
  csrFor,
  newDeviceKey,
  publishSignedRollout,
  startChannelFixture,
  unary,
  type ChannelFixture,
  type PublishedRelease,
} from '../fixtures/device-channel.js';

const BASE = 'grpc-getfile://repo/';

/** One whole repository file over GetFile. */
function getFile(client: RepositoryServiceClient, path: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    const s = client.getFile({ path, offset: 0, length: 0 });
    s.on('data', (m: GetFileResponse) => parts.push(m.data));
    s.on('error', reject);
    s.on('end', () => resolve(Buffer.concat(parts)));
  });
}

/** tuf-js fetcher: `grpc-getfile://repo/<path>` is GetFile(<path>); NOT_FOUND is the 404 tuf-js expects past the newest root. */
class GetFileFetcher extends BaseFetcher {
  constructor(private readonly client: RepositoryServiceClient) {
    super();
  }

  override async fetch(url: string): Promise<ReadableStream<Uint8Array<ArrayBuffer>>> {
    if (!url.startsWith(BASE)) throw new DownloadHTTPError(`unexpected URL ${url}`, 400);
    const path = decodeURIComponent(url.slice(BASE.length));
    const bytes = await getFile(this.client, path).catch((e: unknown) => {
      if ((e as ServiceError).code === status.NOT_FOUND) throw new DownloadHTTPError(`${path}: not found`, 404);
      throw e;
    });
    return new ReadableStream({
      start(controller) {
        controller.enqueue(new Uint8Array(bytes));
        controller.close();
      },
    });
  }
}

describe.each(availableDrivers())('RepositoryService GetFile to a tuf-js Updater on %s', (driver) => {
  let f: ChannelFixture;
  let dir = '';
  let clients: ReturnType<typeof clientsFor>;
  let rel: PublishedRelease;
  const artifactBytes = Buffer.from('v2\n');

  beforeAll(async () => {
    f = await startChannelFixture(driver);
    dir = await mkdtemp(join(tmpdir(), 'svc-channel-tuf-'));
    const key = await newDeviceKey();
    const anon = clientsFor(f.addr, channelCredentials(f.serverCaPem));
    const enrolled = await unary<EnrollResponse>(async (cb) =>
      anon.enrollment.enroll(
        {
          token: await f.newToken(),
          deviceName: 'tuf-1',
          csrDer: await csrFor(key, 'tuf-1'),
          inventory: { agentVersion: '1', profile: 'linux-arm64', product: 'edge', slots: [], attributes: undefined },
        },
        cb,
      ),
    );
    anon.close();
    clients = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: key.keyPem, certPem: encodePem(enrolled.certificateDer, 'CERTIFICATE') }));
    rel = await publishSignedRollout(f, { devices: ['tuf-1'], bytes: artifactBytes, placementPath: '/etc/edge/tuf.conf', version: '2.0.0' });
  });
  afterAll(async () => {
    clients?.close();
    await f?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('serves metadata and targets a tuf-js Updater verifies (release envelope, component artifact); an unsigned path is no target; stored bytes that differ from the signed targets metadata reach the Updater, which refuses them', async () => {
    // the trust anchor a device pins right after enrollment: the current root, over the channel
    const metadataDir = join(dir, 'tuf');
    await mkdir(metadataDir);
    await writeFile(join(metadataDir, 'root.json'), await getFile(clients.repository, 'metadata/root.json'));
    const updater = () =>
      new Updater({
        metadataDir,
        metadataBaseUrl: `${BASE}metadata`,
        targetBaseUrl: `${BASE}targets`,
        fetcher: new GetFileFetcher(clients.repository),
        config: { fetchRetries: 0 },
      });
    const u = updater();
    await u.refresh();

    // both targets of the release as the signed targets metadata names them, downloaded under
    // their consistent-snapshot names and hash-checked by tuf-js
    const envelope = await u.getTargetInfo(rel.target);
    expect(envelope?.hashes.sha256).toBe(digestHex(rel.envelope_digest as Digest));
    const envelopeBytes = await readFile(await u.downloadTarget(envelope!, join(dir, 'envelope')));
    expect(sha256Digest(envelopeBytes)).toBe(rel.envelope_digest);
    expect(JSON.parse(envelopeBytes.toString('utf8'))).toHaveProperty('payloadType');
    const artifact = await u.getTargetInfo(rel.artifactTarget);
    expect([artifact?.length, artifact?.hashes.sha256]).toEqual([artifactBytes.length, digestHex(rel.digest)]);
    expect(await readFile(await u.downloadTarget(artifact!, join(dir, 'artifact')))).toEqual(artifactBytes);

    // a path the signed targets metadata does not name
    expect(await u.getTargetInfo('nope/1/x.bin')).toBeUndefined();

    // the blob swapped on the server's disk (same length): GetFile serves what is stored, the
    // Updater refuses bytes whose hash differs from the signed targets metadata
    const blob = (f.repo.blobs as FsBlobStore).pathOf(rel.digest);
    await chmod(blob, 0o644);
    await writeFile(blob, 'v3\n');
    expect(await getFile(clients.repository, `targets/${hashedTargetPath(rel.artifactTarget, digestHex(rel.digest))}`)).toEqual(Buffer.from('v3\n'));
    const again = updater();
    await again.refresh();
    await expect(again.downloadTarget((await again.getTargetInfo(rel.artifactTarget))!, join(dir, 'tampered'))).rejects.toThrow(/Expected hash/);
  }, 60_000);
});
