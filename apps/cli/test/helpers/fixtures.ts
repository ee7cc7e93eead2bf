import { createHash, createPrivateKey, sign as nodeSign } from 'node:crypto';
import canonicalize from 'canonicalize';

export const TENANT = '3f1c2a9e-8a4b-4c1e-9d2f-6b7a8c9d0e1f';
export const OTHER_TENANT = '9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';
export const PRODUCT = 'gateway';

export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** JCS bytes, computed with the reference `canonicalize` package: independent of release-core. */
export function jcs(value: unknown): Buffer {
  const s = canonicalize(value);
  if (s === undefined) throw new Error('not canonicalizable');
  return Buffer.from(s, 'utf8');
}

/** DSSE v1 PAE, written out here so tests check release-core's bytes rather than reuse them. */
export function pae(payloadType: string, payload: Uint8Array): Buffer {
  const t = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([Buffer.from(`DSSEv1 ${t.length} `), t, Buffer.from(` ${payload.length} `), Buffer.from(payload)]);
}

/** A DSSE envelope signed with node:crypto over arbitrary payload bytes (canonical or not). */
export function handSignedEnvelope(payloadType: string, payload: Uint8Array, keyPem: string, keyid: string) {
  const sig = nodeSign(null, pae(payloadType, payload), createPrivateKey(keyPem));
  return { payloadType, payload: Buffer.from(payload).toString('base64'), signatures: [{ keyid, sig: sig.toString('base64') }] };
}

const APP_BYTES = 'app image bytes';
const APP_HEX = sha256Hex(APP_BYTES);

/** A valid svc.release.v1 payload: one container component, valid through 2026. */
export function releasePayload(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    tenant: TENANT,
    product: PRODUCT,
    release: { version: '1.4.0', name: 'spring' },
    components: [
      {
        name: 'app',
        kind: 'container',
        artifact: { id: 'a1b2c3d4', name: 'app', version: '1.4.0' },
        target: 'artifacts/app/1.4.0/app.tar',
        digest: `sha256:${APP_HEX}`,
        length: APP_BYTES.length,
        media_type: 'application/vnd.oci.image.layer.v1.tar',
      },
    ],
    targets: { 'artifacts/app/1.4.0/app.tar': { length: APP_BYTES.length, hashes: { sha256: APP_HEX } } },
    compatibility: { profiles: ['linux-arm64'] },
    activation: { ordered_groups: [['app']] },
    health: { probes: [{ name: 'http-ok', type: 'http', url: 'http://127.0.0.1:8080/healthz', timeout_s: 30 }] },
    rollout: {
      target_group: 'grp-1',
      target_policy_digest: `sha256:${sha256Hex(jcs({ tenant: TENANT, group: 'grp-1', members: ['gw-0042'] }))}`,
      waves: [{ percent: 10 }, { percent: 100 }],
    },
    approvals: [{ system: 'change-board', ref: 'CAB-1234' }],
    recovery: { on_failure: 'rollback', rollback_boundary: 'release' },
    attestations: [],
    validity: { not_before: '2026-01-01T00:00:00Z', not_after: '2027-01-01T00:00:00Z', max_offline_age_s: 604800 },
    ...over,
  };
}

/** Inside the fixture's validity window. */
export const AT_VALID = '2026-06-01T00:00:00Z';
