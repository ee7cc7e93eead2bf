import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import {
  envelopeBytes,
  generateKeyPair,
  parsePrivateKeyPem,
  signRelease,
  type ComponentKind,
  type Digest,
  type PrivateKey,
  type PublicKey,
} from '@svc/release-core';
import { makeCa, makeDeviceCert } from '@svc/test-kit';
import type { FetchProgress, TargetFetcher } from '../../src/index.js';

export const TENANT = '7d3c2a1e-4b5f-4c6d-8e9f-0a1b2c3d4e5f';
export const PRODUCT = 'svc-dev';
export const PROFILE = 'linux-arm64';

export const sha = (b: Uint8Array | string): Digest => `sha256:${createHash('sha256').update(b).digest('hex')}`;

export interface ComponentInput {
  name: string;
  kind: ComponentKind;
  content: Uint8Array | string;
  placement?: string;
  target?: string;
  media_type?: string;
}

export interface BuiltRelease {
  envelope: Uint8Array;
  payload: Record<string, unknown>;
  targets: Map<string, Uint8Array>;
  key: PrivateKey;
  publicKey: PublicKey;
}

/** A signed svc.release.v1 the way a customer would make it with `svc-release sign`. */
export function buildRelease(opts: {
  components: ComponentInput[];
  groups?: string[][];
  probes?: unknown[];
  version?: string;
  key?: PrivateKey;
  notAfter?: string;
  tenant?: string;
}): BuiltRelease {
  const key = opts.key ?? generateKeyPair('ed25519');
  const targets = new Map<string, Uint8Array>();
  const components = opts.components.map((c) => {
    const bytes = typeof c.content === 'string' ? new TextEncoder().encode(c.content) : c.content;
    const target = c.target ?? `${c.name}/${sha(bytes).slice(7, 19)}${c.kind === 'os-bundle' ? '.raucb' : ''}`;
    targets.set(target, bytes);
    return {
      name: c.name,
      kind: c.kind,
      artifact: { id: `art-${c.name}`, name: c.name, version: opts.version ?? '1.0.0' },
      target,
      digest: sha(bytes),
      length: bytes.length,
      media_type: c.media_type ?? (c.kind === 'os-bundle' ? 'application/vnd.rauc.bundle' : 'application/octet-stream'),
      ...(c.placement ? { placement: { path: c.placement } } : {}),
    };
  });
  const payload = {
    tenant: opts.tenant ?? TENANT,
    product: PRODUCT,
    release: { version: opts.version ?? '1.0.0' },
    components,
    targets: Object.fromEntries(components.map((c) => [c.target, { length: c.length, hashes: { sha256: c.digest.slice(7) } }])),
    compatibility: { profiles: [PROFILE] },
    activation: { ordered_groups: opts.groups ?? [components.map((c) => c.name)] },
    health: { probes: opts.probes ?? [] },
    rollout: { target_group: 'grp-1', target_policy_digest: sha('group') },
    approvals: [],
    recovery: { on_failure: 'rollback', rollback_boundary: 'release' },
    attestations: [],
    validity: { not_before: '2020-01-01T00:00:00Z', not_after: opts.notAfter ?? '2099-01-01T00:00:00Z', max_offline_age_s: 86400 },
  };
  const env = signRelease(payload, key);
  return { envelope: envelopeBytes(env), payload, targets, key, publicKey: key.publicKey };
}

/** Serves targets from memory with resume; `onChunk` lets crash tests die mid-download. */
export class MemoryFetcher implements TargetFetcher {
  readonly calls: { path: string; resumeFrom: number }[] = [];
  constructor(
    readonly targets: Map<string, Uint8Array>,
    readonly opts: { onHalf?: (path: string) => void | Promise<void>; failWith?: Error } = {},
  ) {}

  async fetchTarget(
    path: string,
    _expected: { digest: Digest; length: number },
    destFile: string,
    resumeFrom: number,
    _progress?: FetchProgress,
  ): Promise<void> {
    this.calls.push({ path, resumeFrom });
    if (this.opts.failWith) throw this.opts.failWith;
    const bytes = this.targets.get(path);
    if (!bytes) throw new Error(`404 ${path}`);
    const { appendFile } = await import('node:fs/promises');
    const half = Math.floor(bytes.length / 2);
    if (resumeFrom < half) {
      await appendFile(destFile, bytes.subarray(resumeFrom, half));
      await this.opts.onHalf?.(path);
      resumeFrom = half;
    }
    await appendFile(destFile, bytes.subarray(resumeFrom));
  }
}

export interface DeviceFixture {
  name: string;
  key: PrivateKey;
  certificateDer: Uint8Array;
  caPem: string;
}

/** A tenant device CA and a device certificate (contracts §4), made with the OpenSSL CLI. */
export async function makeDevice(dir: string, name = 'dev-1'): Promise<DeviceFixture> {
  await mkdir(dir, { recursive: true });
  const ca = makeCa(dir, 'ca', { cn: 'tenant device CA' });
  const dev = makeDeviceCert(dir, ca, TENANT, name);
  return { name, key: parsePrivateKeyPem(dev.keyPem), certificateDer: new Uint8Array(dev.certDer), caPem: ca.certPem };
}
