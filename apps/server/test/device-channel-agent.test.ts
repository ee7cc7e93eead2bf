/**
 * End to end across the channel: the AGENT's own channel code (apps/agent/src/channel) against
 * this server, in one process over loopback mTLS. Enrollment, the identity on disk, TUF
 * through RepositoryService with a real tuf-js Updater, the orchestrator placing the file,
 * the signed receipt uploaded from the outbox and accepted by the pipeline.
 */
import 'reflect-metadata';
import { readFile, mkdtemp, rm, stat, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodePem, parsePrivateKeyPem, parsePublicKeyPem } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChannelClients, deviceCredentials } from '../../agent/src/channel/client.js';
import { enroll } from '../../agent/src/channel/enroll.js';
import { loadIdentity, saveIdentity } from '../../agent/src/channel/identity.js';
import { AgentRuntime } from '../../agent/src/channel/runtime.js';
import { ChannelTargetFetcher } from '../../agent/src/channel/tuf-target-fetcher.js';
import { ensureTrustedRoot } from '../../agent/src/channel/trusted-root.js';
import { FilePlacementDriver } from '../../agent/src/drivers/file-placement.js';
import { Journal } from '../../agent/src/journal/journal.js';
import { Orchestrator } from '../../agent/src/transaction/orchestrator.js';
import { availableDrivers } from './helpers/store.js';
import { publishSignedRollout, startChannelFixture, type ChannelFixture } from './device-channel.fixture.js';

describe.each(availableDrivers())('agent channel against the server on %s', (driver) => {
  let f: ChannelFixture;
  let dir = '';
  beforeAll(async () => {
    f = await startChannelFixture(driver);
    dir = await mkdtemp(join(tmpdir(), 'svc-agent-'));
  });
  afterAll(async () => {
    await f?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('enrolls, fetches the release through TUF, applies it and uploads an accepted receipt', async () => {
    const dataDir = join(dir, 'agent');
    const inventory = { agentVersion: '0.1.0', profile: 'linux-arm64', product: 'edge', slots: [] };
    const identity = await enroll({ address: f.addr, bootstrapCaPem: f.serverCaPem, token: await f.newToken(), deviceName: 'agent-1', inventory });
    await saveIdentity(dataDir, identity);
    expect((await stat(join(dataDir, 'identity', 'device.key'))).mode & 0o777).toBe(0o600);
    expect((await loadIdentity(dataDir))?.certPem).toBe(identity.certPem);
    expect(identity.tenantId).toBe(f.tenantId);

    const placed = join(dir, 'placed', 'edge.conf');
    await mkdir(join(dir, 'placed'), { recursive: true });
    const bytes = Buffer.from('listen 0.0.0.0:9000\n');
    const rel = await publishSignedRollout(f, { devices: ['agent-1'], bytes, placementPath: placed });
    const trustDir = join(dir, 'trust');
    await mkdir(trustDir);
    await writeFile(join(trustDir, 'release.pem'), rel.authorizerPem);

    const journal = await Journal.open(join(dataDir, 'journal'));
    const runtime = new AgentRuntime({
      address: f.addr,
      dataDir,
      identity,
      inventory,
      log: () => undefined,
      makeOrchestrator: (fetcher) =>
        new Orchestrator({
          dataDir,
          journal,
          release: { settings: { tenant: f.tenantId, product: 'edge', profile: 'linux-arm64', trustDir }, trustedKeys: [parsePublicKeyPem(rel.authorizerPem)] },
          fetcher,
          drivers: { config: new FilePlacementDriver({ kind: 'config', dataDir }) },
          device: { name: identity.deviceName, certificateDer: decodePem(identity.certPem, 'CERTIFICATE'), key: parsePrivateKeyPem(identity.keyPem) },
        }),
    });
    try {
      await ensureTrustedRoot(runtime.clients.repository, join(dataDir, 'tuf'));
      const interval = await runtime.tick();
      expect(interval).toBe(60);
      expect(await readFile(placed)).toEqual(bytes);
      // receipt accepted and the outbox emptied only after the server acknowledged it
      expect(await runtime.orchestrator.outbox.list()).toEqual([]);
      const receipts = await f.t.store.db.selectFrom('release_receipts' as never).selectAll().execute();
      expect(receipts).toHaveLength(1);
      // nothing left to do for this device
      const again = await runtime.tick();
      expect(again).toBe(60);
    } finally {
      runtime.clients.close();
    }
  }, 60_000);

  it('a tuf-js Updater through the channel refuses a target whose bytes differ from the signed metadata', async () => {
    const dataDir = join(dir, 'agent2');
    const identity = await enroll({ address: f.addr, bootstrapCaPem: f.serverCaPem, token: await f.newToken(), deviceName: 'agent-2', inventory: { agentVersion: '0.1.0', profile: 'linux-arm64', product: 'edge', slots: [] } });
    const rel = await publishSignedRollout(f, { devices: ['agent-2'], bytes: Buffer.from('v2\n'), placementPath: join(dir, 'p2'), version: '2.0.0' });
    const clients = new ChannelClients(f.addr, deviceCredentials(identity));
    try {
      await ensureTrustedRoot(clients.repository, join(dataDir, 'tuf'));
      const fetcher = new ChannelTargetFetcher(clients.repository, join(dataDir, 'tuf'));
      const env = await fetcher.fetchBytes(rel.target, 1024 * 1024);
      expect(env.length).toBeGreaterThan(100);
      // the assignment claims other bytes than TUF signed: refused before any download
      await expect(fetcher.fetchTarget(rel.artifactTarget, { digest: `sha256:${'0'.repeat(64)}`, length: 3 }, join(dataDir, 'x'), 0)).rejects.toMatchObject({ code: 'DIGEST_MISMATCH' });
      // unknown target: TUF says no
      await expect(fetcher.fetchBytes('nope/1/x.bin', 1024)).rejects.toMatchObject({ code: 'FETCH_FAILED' });
      // the right claim downloads and verifies
      await fetcher.fetchTarget(rel.artifactTarget, { digest: rel.digest, length: 3 }, join(dataDir, 'ok'), 0);
      expect(await readFile(join(dataDir, 'ok'), 'utf8')).toBe('v2\n');
    } finally {
      clients.close();
    }
  }, 60_000);
});
