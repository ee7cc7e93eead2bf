/**
 * Shared setup of the device-channel suites: a migrated store, a tenant, a temp data dir,
 * the real gRPC server on 127.0.0.1:0 with its real TLS material, and device-side helpers
 * (P-256 keys, CSRs, mTLS clients). Not a test file itself.
 */
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, type ChannelCredentials, type ServiceError } from '@grpc/grpc-js';
import * as x509 from '@peculiar/x509';
import { DeviceServiceClient, EnrollmentServiceClient, RepositoryServiceClient, type EnrollResponse } from '@svc/device-proto';
import { newSecret } from '../src/auth/secrets.js';
import type { DeviceChannelServer } from '../src/device-channel/channel-server.js';
import type { DeviceChannelContext } from '../src/device-channel/context.js';
import { P256_KEY, P256_SIGN } from '../src/device-channel/pki.js';
import { DEVICE_CHANNEL_TLS_NAME } from '../src/device-channel/server-tls.js';
import { startDeviceChannelService } from '../src/device-channel/wiring.js';
import { SigningRepository } from '../src/signing-repo/repository.js';
import { Readable } from 'node:stream';
import { encodePem, generateKeyPair, signRelease } from '@svc/release-core';
import { recordPublishedArtifact } from '../src/resources/artifacts/commands.js';
import { publishArtifactTarget, storeArtifactBytes } from '../src/resources/artifacts/publication.js';
import { registerAuthorizerKey } from '../src/resources/authorizer-keys/commands.js';
import type { PipelineDeps } from '../src/resources/pipeline-deps.js';
import { createGroup } from '../src/resources/groups/commands.js';
import { prepareRelease, publishRelease } from '../src/resources/releases/commands.js';
import { startSignedRollout } from '../src/resources/rollouts/commands.js';
import { runUnitOfWork, systemActor, type Command, type UnitOfWorkHooks } from '../src/resources/unit-of-work.js';
import { createTenant } from '../src/resources/tenants/queries.js';
import { createTestStore, type TestStore } from './helpers/store.js';
import type { Driver } from '../src/store/open.js';

export interface ChannelFixture {
  t: TestStore;
  tenantId: string;
  dataDir: string;
  ctx: DeviceChannelContext;
  repo: SigningRepository;
  server: DeviceChannelServer;
  addr: string;
  serverCaPem: string;
  newToken(o?: { maxUses?: number; expiresAt?: Date; tenantId?: string }): Promise<string>;
  dispose(): Promise<void>;
}

/** The real device channel (real pipeline seam, enrollment tokens, signing repository). */
export async function startChannelFixture(
  driver: Driver,
  o: {
    now?: () => Date;
    checkInIntervalS?: number;
    trustRefreshMs?: number;
    maxConnections?: number;
    retryAfterMs?: number;
    /** Start the bundle port too (bundle-server.ts), on a free loopback port. */
    bundlePort?: boolean;
    hooks?: { unitOfWork?: UnitOfWorkHooks };
  } = {},
): Promise<ChannelFixture> {
  const t = await createTestStore(driver);
  const db = t.store.db;
  const tenantId = await createTenant(db, 'acme');
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-channel-'));
  const repo = new SigningRepository({ db, dataDir, ...(o.now ? { clock: o.now } : {}) });
  await repo.ensureTenantRepo(tenantId);
  const { server, ctx } = await startDeviceChannelService({
    db,
    listen: t.store.listen,
    dataDir,
    keys: repo.wrappedKeys,
    addr: '127.0.0.1:0',
    ...(o.bundlePort ? { bundleAddr: { host: '127.0.0.1', port: 0 } } : {}),
    repository: repo,
    log: { error: (obj, msg) => console.error(msg, obj) },
    ...(o.now ? { now: o.now } : {}),
    ...(o.checkInIntervalS ? { checkInIntervalS: o.checkInIntervalS } : {}),
    ...(o.trustRefreshMs ? { trustRefreshMs: o.trustRefreshMs } : {}),
    ...(o.maxConnections ? { maxConnections: o.maxConnections } : {}),
    ...(o.retryAfterMs ? { retryAfterMs: o.retryAfterMs } : {}),
    ...(o.hooks ? { hooks: o.hooks } : {}),
  });
  return {
    t,
    tenantId,
    dataDir,
    ctx,
    repo,
    server,
    addr: `127.0.0.1:${server.port}`,
    serverCaPem: encodePem(ctx.serverCaDer, 'CERTIFICATE'),
    newToken: async (n = {}) => {
      const s = newSecret('svce');
      await db
        .insertInto('enroll_tokens')
        .values({
          tenant_id: n.tenantId ?? tenantId,
          name: 'test',
          secret_hash: s.hash,
          prefix: s.prefix,
          max_uses: n.maxUses ?? 1,
          expires_at: n.expiresAt ?? new Date(Date.now() + 3_600_000),
        })
        .execute();
      return s.plaintext;
    },
    dispose: async () => {
      await server.close(100);
      await t.dispose();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface DeviceKey {
  keys: webcrypto.CryptoKeyPair;
  keyPem: string;
}

export async function newDeviceKey(alg: 'p256' | 'p384' = 'p256'): Promise<DeviceKey> {
  const params = alg === 'p256' ? P256_KEY : { name: 'ECDSA', namedCurve: 'P-384' };
  const keys = await webcrypto.subtle.generateKey(params, true, ['sign', 'verify']);
  const pkcs8 = new Uint8Array(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return { keys, keyPem: encodePem(pkcs8, 'PRIVATE KEY') };
}

export async function csrFor(key: DeviceKey, cn: string): Promise<Buffer> {
  const alg = (key.keys.publicKey.algorithm as { namedCurve?: string }).namedCurve === 'P-384' ? { name: 'ECDSA', hash: 'SHA-384' } : P256_SIGN;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name: `CN=${cn}`, keys: key.keys as never, signingAlgorithm: alg });
  return Buffer.from(csr.rawData);
}

/** What a device sets: the server certificate names DEVICE_CHANNEL_TLS_NAME, not the address. */
export const CHANNEL_OPTIONS = { 'grpc.ssl_target_name_override': DEVICE_CHANNEL_TLS_NAME, 'grpc.default_authority': DEVICE_CHANNEL_TLS_NAME };

export function channelCredentials(caPem: string, identity?: { keyPem: string; certPem: string }): ChannelCredentials {
  return identity === undefined
    ? credentials.createSsl(Buffer.from(caPem))
    : credentials.createSsl(Buffer.from(caPem), Buffer.from(identity.keyPem), Buffer.from(identity.certPem));
}

export function clientsFor(addr: string, creds: ChannelCredentials) {
  return {
    enrollment: new EnrollmentServiceClient(addr, creds, CHANNEL_OPTIONS),
    device: new DeviceServiceClient(addr, creds, CHANNEL_OPTIONS),
    repository: new RepositoryServiceClient(addr, creds, CHANNEL_OPTIONS),
    close() {
      this.enrollment.close();
      this.device.close();
      this.repository.close();
    },
  };
}

export interface EnrolledDevice {
  name: string;
  key: DeviceKey;
  certPem: string;
  certDer: Uint8Array;
  /** mTLS clients with the device's certificate. */
  clients: ReturnType<typeof clientsFor>;
}

/** Enrolls `name` with a fresh token and key through the real Enroll call. */
export async function enrollDevice(f: ChannelFixture, name: string): Promise<EnrolledDevice> {
  const key = await newDeviceKey();
  const anon = clientsFor(f.addr, channelCredentials(f.serverCaPem));
  try {
    const res = await unary<EnrollResponse>(async (cb) =>
      anon.enrollment.enroll(
        {
          token: await f.newToken(),
          deviceName: name,
          csrDer: await csrFor(key, name),
          inventory: { agentVersion: '1', profile: 'linux-arm64', product: 'edge', slots: [], attributes: undefined },
        },
        cb,
      ),
    );
    const certPem = encodePem(res.certificateDer, 'CERTIFICATE');
    return {
      name,
      key,
      certPem,
      certDer: new Uint8Array(res.certificateDer),
      clients: clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: key.keyPem, certPem })),
    };
  } finally {
    anon.close();
  }
}

/** Promisified unary call: `await unary((cb) => client.checkIn(req, cb))`. */
export function unary<T>(fn: (cb: (err: ServiceError | null, res?: T) => void) => unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    fn((err, res) => (err ? reject(err) : resolve(res as T)));
  });
}

/** The status code and svc-error-code trailer of a failed call. */
export async function refusal(p: Promise<unknown>): Promise<{ code: number; details: string; svcCode: string | undefined }> {
  try {
    await p;
  } catch (e) {
    const err = e as ServiceError;
    return { code: err.code, details: err.details, svcCode: err.metadata?.get('svc-error-code')[0]?.toString() };
  }
  throw new Error('call succeeded but a refusal was expected');
}

export interface PublishedRelease {
  id: string;
  product: string;
  version: string;
  payload_digest: string;
  envelope_digest: string;
  target: string;
  rolloutId: string;
  deploymentId: string;
  /** The authorizer's public key PEM (the device's trust dir). */
  authorizerPem: string;
  digest: `sha256:${string}`;
  /** TUF target path of the component artifact. */
  artifactTarget: string;
}

/**
 * A published single-component signed release (config file) and a started rollout to
 * `devices`, through the real pipeline and signing repository.
 */
export async function publishSignedRollout(
  f: ChannelFixture,
  o: {
    devices: string[];
    bytes: Buffer;
    placementPath: string;
    product?: string;
    version?: string;
    waves?: { name: string; percent: number }[];
    /** An os-bundle member (a RAUC bundle, no placement) instead of a config file. */
    osBundle?: boolean;
  },
): Promise<PublishedRelease> {
  const db = f.t.store.db;
  const deps: PipelineDeps = { db, blobs: f.repo.blobs, publishTargets: (t, e, opts) => f.repo.publishTargets(t, e, opts), clock: () => new Date() };
  const version = o.version ?? '1.0.0';
  const run = <I, O>(command: Command<I, O>, input: I) =>
    runUnitOfWork(db, { tenant: f.tenantId, actor: systemActor('test-fixture'), now: new Date() }, (uow) => command(uow, input));
  const blob = await storeArtifactBytes(deps, Readable.from([o.bytes]));
  const art = await run(
    recordPublishedArtifact,
    await publishArtifactTarget(
      deps,
      f.tenantId,
      o.osBundle
        ? { name: 'rootfs', version, kind: 'os-bundle', filename: 'rootfs.raucb' }
        : { name: 'edge-conf', version, kind: 'config', filename: 'edge.conf' },
      blob,
    ),
  );
  const group = await run(createGroup, { name: `field-${version}`, members: o.devices });
  const authorizer = generateKeyPair('ed25519');
  await run(registerAuthorizerKey, { name: `release-key-${version}`, public_key_pem: authorizer.publicKey.pem });
  const payload = {
    tenant: f.tenantId,
    product: o.product ?? 'edge',
    release: { version },
    components: [
      {
        name: o.osBundle ? 'os' : 'edge-conf',
        kind: o.osBundle ? 'os-bundle' : 'config',
        artifact: { id: art.id, name: art.name, version: art.version },
        target: art.target,
        digest: art.digest,
        length: art.length,
        media_type: art.media_type,
        ...(o.osBundle ? {} : { placement: { path: o.placementPath, mode: '0644' } }),
      },
    ],
    targets: { [art.target]: { length: art.length, hashes: { sha256: art.digest.slice('sha256:'.length) } } },
    compatibility: { profiles: ['linux-arm64'] },
    activation: { ordered_groups: [[o.osBundle ? 'os' : 'edge-conf']] },
    health: { probes: [{ name: 'up', type: 'command', command: ['/bin/true'], timeout_s: 5 }], timeout_s: 60 },
    rollout: { target_group: group.id, target_policy_digest: group.snapshot_digest, ...(o.waves ? { waves: o.waves } : {}) },
    approvals: [],
    recovery: { on_failure: 'rollback', rollback_boundary: 'release' },
    attestations: [],
    validity: { not_before: '2020-01-01T00:00:00Z', not_after: '2099-01-01T00:00:00Z', max_offline_age_s: 2592000 },
  };
  const prepared = await prepareRelease(deps, f.tenantId, { envelope: signRelease(payload, authorizer), expected_product: payload.product });
  if (!('record' in prepared)) throw new Error(`release ${version} was already published`);
  const scope = { tenant: f.tenantId, actor: systemActor('test'), now: new Date() };
  const sub = await runUnitOfWork(db, scope, (uow) => publishRelease(uow, prepared.record));
  const started = await runUnitOfWork(db, scope, (uow) => startSignedRollout(uow, { releaseId: sub.release.id }));
  const r = sub.release as unknown as Omit<PublishedRelease, 'rolloutId' | 'deploymentId' | 'authorizerPem' | 'digest' | 'artifactTarget'>;
  return {
    ...r,
    rolloutId: started.rollout_ids[0]!,
    deploymentId: started.deployment_id,
    authorizerPem: authorizer.publicKey.pem,
    digest: art.digest as `sha256:${string}`,
    artifactTarget: art.target,
  };
}

/** Devices enrolled under `names` and one signed rollout to all of them. */
export async function enrollFleetWithRollout(
  f: ChannelFixture,
  names: string[],
  o: Omit<Parameters<typeof publishSignedRollout>[1], 'devices'>,
): Promise<{ devs: EnrolledDevice[]; rel: PublishedRelease }> {
  const devs: EnrolledDevice[] = [];
  for (const name of names) devs.push(await enrollDevice(f, name));
  return { devs, rel: await publishSignedRollout(f, { ...o, devices: names }) };
}

/** A channel, enrolled devices and one signed rollout to all of them: the setup of the receipt suites. */
export async function startRolloutFixture(
  driver: Driver,
  names: string[],
  o: Omit<Parameters<typeof publishSignedRollout>[1], 'devices'>,
): Promise<{ f: ChannelFixture; devs: EnrolledDevice[]; rel: PublishedRelease; dispose(): Promise<void> }> {
  const f = await startChannelFixture(driver);
  const { devs, rel } = await enrollFleetWithRollout(f, names, o);
  return {
    f,
    devs,
    rel,
    dispose: async () => {
      for (const d of devs) d.clients.close();
      await f.dispose();
    },
  };
}
