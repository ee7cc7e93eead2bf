import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import canonicalizeLib from 'canonicalize';
import {
  DEFAULT_CLOCK_SKEW_SECONDS,
  canonicalize,
  envelopeBytes,
  envelopeDigest,
  generateKeyPair,
  parseEnvelope,
  parsePrivateKeyPem,
  signEnvelope,
  signRelease,
  transactionMembers,
  verifyRelease,
  RELEASE_PAYLOAD_TYPE,
  type ReleasePayload,
} from '../src/index.js';
import { loadVector, refusal, vectorsDir } from './helpers/vectors.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const payloads = loadVector('release-payloads.json');
const single: ReleasePayload = payloads.good.single;
const multi: ReleasePayload = payloads.good.multi;
const key = parsePrivateKeyPem(readFileSync(join(vectorsDir, 'keys', 'authorizer.key.pem'), 'utf8'));
const opts = (over: Partial<Parameters<typeof verifyRelease>[1]> = {}) => ({
  trustedKeys: [key.publicKey],
  tenant: single.tenant,
  product: single.product,
  now: new Date('2027-06-01T00:00:00Z'),
  ...over,
});

describe('signRelease', () => {
  it('validates before signing', () => {
    expect(refusal(() => signRelease({ ...single, tenant: 'nope' }, key)).code).toBe('PAYLOAD_INVALID');
  });
  it('refuses a P-256 key: releases are Ed25519', () => {
    expect(refusal(() => signRelease(single, generateKeyPair('p256'))).code).toBe('KEY_INVALID');
  });
  it('signs the canonical bytes, whatever key order the input has', () => {
    const reordered = Object.fromEntries(Object.entries(single).reverse());
    const env = signRelease(reordered, key);
    expect(Buffer.from(env.payload, 'base64').toString()).toBe(canonicalizeLib(single));
    expect(env).toEqual(signRelease(single, key)); // Ed25519 is deterministic
  });
});

describe('verifyRelease', () => {
  const env = signRelease(single, key);
  it('returns frozen payload, digests, key id and bytes', () => {
    const r = verifyRelease(env, opts());
    expect(Object.isFrozen(r.payload.components[0])).toBe(true);
    expect(r.payloadDigest).toBe(`sha256:${createHash('sha256').update(r.payloadBytes).digest('hex')}`);
    // contracts §1: envelope digest = sha256(JCS(envelope)), computed independently with the library
    expect(r.envelopeDigest).toBe(`sha256:${createHash('sha256').update(canonicalizeLib(env)!).digest('hex')}`);
    expect(r.keyid).toBe(key.publicKey.keyid);
  });
  it('checks the signature before looking at the bytes (verify bytes, then parse)', () => {
    const junk = signEnvelope(RELEASE_PAYLOAD_TYPE, new TextEncoder().encode('{not json'), generateKeyPair('ed25519'));
    expect(refusal(() => verifyRelease(junk, opts())).code).toBe('KEY_UNTRUSTED');
  });
  it('refuses a P-256 key even when it is listed as trusted', () => {
    const ec = generateKeyPair('p256');
    const envEc = signEnvelope(RELEASE_PAYLOAD_TYPE, canonicalize(single), ec);
    expect(refusal(() => verifyRelease(envEc, opts({ trustedKeys: [ec.publicKey] }))).code).toBe('KEY_UNTRUSTED');
  });
  it('allows exactly the clock skew at both ends of the validity window', () => {
    const nb = Date.parse(single.validity.not_before);
    const na = Date.parse(single.validity.not_after);
    const skew = DEFAULT_CLOCK_SKEW_SECONDS * 1000;
    expect(() => verifyRelease(env, opts({ now: new Date(nb - skew) }))).not.toThrow();
    expect(refusal(() => verifyRelease(env, opts({ now: new Date(nb - skew - 1000) }))).code).toBe('NOT_YET_VALID');
    expect(() => verifyRelease(env, opts({ now: new Date(na + skew) }))).not.toThrow();
    expect(refusal(() => verifyRelease(env, opts({ now: new Date(na + skew + 1000) }))).code).toBe('EXPIRED');
    expect(refusal(() => verifyRelease(env, opts({ now: new Date(nb - 1000), clockSkewSeconds: 0 }))).code).toBe('NOT_YET_VALID');
  });
  it('checks the offline age on the device clock', () => {
    const now = new Date('2027-06-01T00:00:00Z');
    const max = single.validity.max_offline_age_s;
    expect(() => verifyRelease(env, opts({ now, lastOnlineAt: new Date(now.getTime() - max * 1000) }))).not.toThrow();
    expect(refusal(() => verifyRelease(env, opts({ now, lastOnlineAt: new Date(now.getTime() - max * 1000 - 1000) }))).code).toBe('OFFLINE_AGE_EXCEEDED');
  });
  it('checks the device profile', () => {
    expect(() => verifyRelease(env, opts({ profile: 'linux-amd64' }))).not.toThrow();
    expect(refusal(() => verifyRelease(env, opts({ profile: 'windows-x64' }))).code).toBe('PROFILE_INCOMPATIBLE');
  });
  it('applies the byte cap to envelope text', () => {
    expect(refusal(() => verifyRelease(JSON.stringify(env), opts({ maxBytes: 500 }))).code).toBe('SIZE_LIMIT');
  });
  it('accepts a second signature by an untrusted key next to the trusted one', () => {
    const other = signRelease(single, generateKeyPair('ed25519'));
    const both = { ...env, signatures: [...other.signatures, ...env.signatures] };
    expect(verifyRelease(both, opts()).keyid).toBe(key.publicKey.keyid);
  });
});

describe('envelope bytes', () => {
  it('the fast path for parsed envelopes writes exactly JCS(envelope)', () => {
    const env = signRelease(multi, key);
    const parsed = parseEnvelope(JSON.stringify(env));
    expect(Buffer.from(envelopeBytes(parsed)).toString()).toBe(canonicalizeLib(env));
    expect(envelopeDigest(parsed)).toBe(envelopeDigest(env));
  });
});

describe('health probes scoped to an activation group', () => {
  const withProbeGroup = (group: unknown) => ({
    ...multi,
    health: { probes: [{ name: 'app-ready', type: 'command', command: ['true'], timeout_s: 5, group }] },
  });
  it('accepts a group index within activation.ordered_groups', () => {
    expect(() => signRelease(withProbeGroup(1), key)).not.toThrow();
  });
  it('refuses an index past the last group, or not an integer, naming the field', () => {
    for (const bad of [2, -1, 'one']) {
      const err = refusal(() => signRelease(withProbeGroup(bad), key));
      expect(err.code).toBe('PAYLOAD_INVALID');
      expect(err.issues.map((i) => i.path)).toEqual(['health.probes[0].group']);
    }
  });
});

describe('transactionMembers', () => {
  it('numbers groups and global positions from activation.ordered_groups', () => {
    expect(transactionMembers(multi).map((m) => [m.component, m.group, m.position])).toEqual([
      ['edge-conf', 0, 0],
      ['detector', 1, 1],
      ['edge-app', 1, 2],
    ]);
    expect(transactionMembers(multi)[1]!.digest).toBe(multi.components.find((c) => c.name === 'detector')!.digest);
  });
});
