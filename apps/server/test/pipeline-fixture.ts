import { defaultWrappedKeys } from '../src/key-custody/kek-source.js';
/**
 * Shared set-up of the pipeline suites: a test app on a fresh store with a REAL signing
 * repository in a temp SVC_DATA_DIR, devices, multipart uploads, release payloads signed with
 * release-core, and device identities issued by the tenant's real device CA (for receipts).
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { extract, pack } from 'tar-stream';
import { generateKeyPair, parsePrivateKeyPem, signRelease, type PrivateKey, type ReleasePayload } from '@svc/release-core';
import { DeviceCaStore } from '../src/device-channel/device-ca.js';
import { issueCertificate } from '../src/device-channel/pki.js';
import { x509 } from '@svc/release-core/x509';
import type { PipelineHooks } from '../src/resources/pipeline-deps.js';
import { SigningRepository } from '../src/signing-repo/index.js';
import { blobStoreKind, openBlobStore } from '../src/blobs/index.js';
import type { Driver } from '../src/store/open.js';
import { upsertEnrolledDevice } from '../src/resources/devices/queries/identity.js';
import { createTestApp, jsonApi, type ApiCall, type TestApp } from './helpers/app.js';
import { createTestStore } from './helpers/store.js';

export interface PipelineFixture {
  t: TestApp;
  repo: SigningRepository;
  dataDir: string;
  hooks: PipelineHooks;
  admin: Record<string, string>;
  device(name: string, profile?: string | null, tenantId?: string): Promise<void>;
  upload(
    a: { name: string; version: string; kind: string; bytes: Uint8Array | string; filename?: string; media_type?: string },
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any }>;
  api: ApiCall;
  dispose(): Promise<void>;
}

export async function createPipelineFixture(driver: Driver, o: { maxArtifactBytes?: number } = {}): Promise<PipelineFixture> {
  const store = await createTestStore(driver);
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-pipeline-'));
  const hooks: PipelineHooks = {};
  let clockRef: () => Date = () => new Date();
  // the blob store the server picks for this driver: chunks in the database on PostgreSQL
  const blobs = openBlobStore(blobStoreKind(undefined, driver === 'postgres' ? store.openOptions.databaseUrl : undefined), { db: store.store.db, dataDir });
  const repo = new SigningRepository({ db: store.store.db, dataDir, clock: () => clockRef(), blobs });
  const t = await createTestApp(driver, {
    shareWith: store,
    ctxOverrides: { signingRepo: repo, pipeline: { hooks, ...(o.maxArtifactBytes ? { maxArtifactBytes: o.maxArtifactBytes } : {}) } },
  });
  clockRef = t.clock.now;
  const admin = await t.loginAs('admin');
  const api = jsonApi(t, admin);
  return {
    t,
    repo,
    dataDir,
    hooks,
    admin,
    device: async (name, profile = 'linux-arm64', tenantId = t.tenantId) => {
      await upsertEnrolledDevice(store.store.db, { tenantId, name, profile, certFingerprint: `sha256:${name}`, certNotAfter: null, now: t.clock.now() });
    },
    upload: async (a, headers = admin) => {
      const { payload, contentType } = artifactMultipart(a);
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/artifacts', headers: { ...headers, 'content-type': contentType }, payload });
      return { status: res.statusCode, body: JSON.parse(res.body) };
    },
    api,
    dispose: async () => {
      await t.dispose();
      await store.dispose();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The multipart body of `POST /artifacts` (text fields first, then the file) and its content type. */
export function artifactMultipart(a: { name: string; version: string; kind: string; bytes: Uint8Array | string; filename?: string; media_type?: string }): {
  payload: Buffer;
  contentType: string;
} {
  const boundary = `----svc${randomUUID()}`;
  const parts: Buffer[] = [];
  const field = (k: string, v: string) => parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  field('name', a.name);
  field('version', a.version);
  field('kind', a.kind);
  if (a.media_type) field('media_type', a.media_type);
  parts.push(
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${a.filename ?? `${a.name}.bin`}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    ),
  );
  parts.push(Buffer.from(a.bytes));
  parts.push(Buffer.from(`\r\n--${boundary}--\r\n`));
  return { payload: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** A valid svc.release.v1 payload over published artifacts (contracts §2). */
export function releasePayload(a: {
  tenant: string;
  product?: string;
  version?: string;
  artifacts: { id: string; name: string; version: string; kind: string; target: string; digest: string; length: number; media_type: string }[];
  group: { id: string; snapshot_digest: string };
  profiles?: string[];
  waves?: unknown[];
  failure_threshold?: unknown;
  notAfter?: string;
}): ReleasePayload {
  const components = a.artifacts.map((x) => ({
    name: x.name,
    kind: x.kind,
    artifact: { id: x.id, name: x.name, version: x.version },
    target: x.target,
    digest: x.digest,
    length: x.length,
    media_type: x.media_type,
    ...(x.kind === 'model' || x.kind === 'config' ? { placement: { path: `/var/lib/svc/${x.name}`, mode: '0644' } } : {}),
  }));
  return {
    tenant: a.tenant,
    product: a.product ?? 'edge-gateway',
    release: { version: a.version ?? '1.0.0' },
    components,
    targets: Object.fromEntries(a.artifacts.map((x) => [x.target, { length: x.length, hashes: { sha256: x.digest.slice(7) } }])),
    compatibility: { profiles: a.profiles ?? ['linux-arm64'] },
    activation: { ordered_groups: components.map((c) => [c.name]) },
    health: { probes: [{ name: 'up', type: 'command', command: ['/bin/true'], timeout_s: 5 }], timeout_s: 60 },
    rollout: {
      target_group: a.group.id,
      target_policy_digest: a.group.snapshot_digest,
      ...(a.waves ? { waves: a.waves } : {}),
      ...(a.failure_threshold ? { failure_threshold: a.failure_threshold } : {}),
    },
    approvals: [],
    recovery: { on_failure: 'rollback', rollback_boundary: 'release' },
    attestations: [],
    validity: { not_before: '2020-01-01T00:00:00Z', not_after: a.notAfter ?? '2099-01-01T00:00:00Z', max_offline_age_s: 86400 },
  } as unknown as ReleasePayload;
}

export function newAuthorizer(): { key: PrivateKey; pem: string } {
  const key = generateKeyPair('ed25519');
  return { key, pem: key.publicKey.pem };
}

export function sign(payload: ReleasePayload, key: PrivateKey) {
  return signRelease(payload, key);
}

/** A device identity issued by the tenant's real device CA (contracts §4), with its P-256 key. */
export async function deviceIdentity(f: PipelineFixture, deviceName: string, tenantId = f.t.tenantId): Promise<{ certDer: Uint8Array; key: PrivateKey }> {
  const cas = new DeviceCaStore(f.t.testStore.store.db, defaultWrappedKeys(f.t.testStore.store.db, f.dataDir));
  const ca = await cas.get(tenantId, f.t.clock.now());
  const kp = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const spki = kp.publicKey.export({ format: 'der', type: 'spki' });
  const now = f.t.clock.now();
  const der = await issueCertificate(ca, {
    subjectCN: deviceName,
    publicKey: new x509.PublicKey(spki),
    usage: 'clientAuth',
    sanUris: [`spiffe://${tenantId}/device/${deviceName}`],
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + 30 * 86_400_000),
  });
  return { certDer: der, key: parsePrivateKeyPem(kp.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()) };
}

/** A tar of `files` in order (to build or tamper with an export). */
export async function tar(files: Map<string, Buffer>): Promise<Buffer> {
  const p = pack();
  for (const [name, bytes] of files) p.entry({ name, size: bytes.length }, bytes);
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p as unknown as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

/** Every entry of a tar (bytes or a stream) by name. */
export function untar(input: Buffer | Readable): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  return new Promise((resolve, reject) => {
    const ex = extract();
    ex.on('entry', (h, s, next) => {
      const parts: Buffer[] = [];
      s.on('data', (c: unknown) => parts.push(c as Buffer));
      s.on('end', () => {
        files.set(h.name, Buffer.concat(parts));
        next();
      });
    });
    ex.on('finish', () => resolve(files));
    ex.on('error', reject);
    if (Buffer.isBuffer(input)) ex.end(input);
    else input.pipe(ex);
  });
}
