import { describe, expect, it } from 'vitest';
import {
  type CryptoProvider,
  checkReceiptAgainstRelease,
  nobleCryptoProvider,
  nodeCryptoProvider,
  parseCertificatePem,
  parsePublicKeyPem,
  targetPolicyDigest,
  validateReleasePayload,
  verifyReceipt,
  verifyRelease,
} from '../src/index.js';
import { loadVector, refusal } from './helpers/vectors.js';

const payloads = loadVector('release-payloads.json');
const envelopes = loadVector('release-envelopes.json');
const receipts = loadVector('receipts.json');
const policies = loadVector('target-policy.json');
const named = (list: any[]): [string, any][] => list.map((x) => [x.name as string, x]);

type V = { tenant: string; product: string; now: string; profile?: string; lastOnlineAt?: string };
const releaseOpts = (v: V, crypto: CryptoProvider) => ({
  trustedKeys: envelopes.trusted_keys.map((p: string) => parsePublicKeyPem(p)),
  tenant: v.tenant,
  product: v.product,
  now: new Date(v.now),
  ...(v.profile ? { profile: v.profile } : {}),
  ...(v.lastOnlineAt ? { lastOnlineAt: new Date(v.lastOnlineAt) } : {}),
  crypto,
});
type R = { tenant: string; device: string; now: string; connectionCertificate?: string };
const receiptOpts = (v: R, crypto: CryptoProvider) => ({
  ca: parseCertificatePem(receipts.ca_pem),
  tenant: v.tenant,
  device: v.device,
  now: new Date(v.now),
  ...(v.connectionCertificate ? { connectionCertificate: new Uint8Array(Buffer.from(v.connectionCertificate, 'base64')) } : {}),
  crypto,
});

describe('release payload vectors', () => {
  it.each(Object.entries(payloads.good))('good payload %s validates', (_n, p) => {
    expect(validateReleasePayload(p)).toBe(p);
  });
  it.each(named(payloads.bad))('bad payload: %s', (_n, b: any) => {
    const err = refusal(() => validateReleasePayload(b.payload));
    expect(err.code).toBe(b.code);
    for (const want of b.issues) {
      expect(err.issues, `issue at ${want.path}`).toContainEqual(expect.objectContaining({ path: want.path, message: expect.stringContaining(want.message) }));
    }
    expect(err.message).toContain(err.issues[0]!.path);
  });
  it('reports every issue at once', () => {
    const several = payloads.bad.find((b: any) => b.name === 'several problems at once');
    expect(refusal(() => validateReleasePayload(several.payload)).issues).toHaveLength(3);
  });
});

describe.each([
  ['node', nodeCryptoProvider],
  ['noble', nobleCryptoProvider],
] as const)('signed vectors with the %s provider', (_n, crypto) => {
  it.each(named(envelopes.good))('good release %s verifies with the recorded digests', (_name, g: any) => {
    const r = verifyRelease(g.envelope, releaseOpts(g.verify, crypto));
    expect(r.payloadDigest).toBe(g.payload_digest);
    expect(r.envelopeDigest).toBe(g.envelope_digest);
    expect(r.keyid).toBe(parsePublicKeyPem(envelopes.trusted_keys[0]).keyid);
    // also as JSON text, as the CLI and server receive it
    expect(verifyRelease(JSON.stringify(g.envelope), releaseOpts(g.verify, crypto)).envelopeDigest).toBe(g.envelope_digest);
  });
  it.each(named(envelopes.bad))('bad release: %s', (_name, b: any) => {
    expect(refusal(() => verifyRelease(b.envelope, releaseOpts(b.verify, crypto))).code).toBe(b.code);
  });
  it.each(named(receipts.good))('good receipt %s verifies and matches its release', (_name, g: any) => {
    const r = verifyReceipt(g.envelope, receiptOpts(g.verify, crypto));
    expect(r.certificate.subjectCN).toBe('edge-01');
    const rel = envelopes.good.find((e: any) => e.name === g.release);
    const v = verifyRelease(rel.envelope, releaseOpts(rel.verify, crypto));
    expect(() =>
      checkReceiptAgainstRelease(r.payload, {
        release: v.payload,
        payloadDigest: v.payloadDigest,
        envelopeDigest: v.envelopeDigest,
        rollouts: g.rollouts,
        transactionId: g.transaction_id,
      }),
    ).not.toThrow();
  });
  it.each(named(receipts.bad))('bad receipt: %s', (_name, b: any) => {
    expect(refusal(() => verifyReceipt(b.envelope, receiptOpts(b.verify, crypto))).code).toBe(b.code);
  });
  it.each(named(receipts.mismatched))('receipt not matching its rollout: %s', (_name, b: any) => {
    const r = verifyReceipt(b.envelope, receiptOpts(b.verify, crypto));
    const rel = envelopes.good.find((e: any) => e.name === b.release);
    const v = verifyRelease(rel.envelope, releaseOpts(rel.verify, crypto));
    const err = refusal(() =>
      checkReceiptAgainstRelease(r.payload, {
        release: v.payload,
        payloadDigest: v.payloadDigest,
        envelopeDigest: v.envelopeDigest,
        rollouts: b.rollouts,
        transactionId: b.transaction_id,
      }),
    );
    expect(err.code).toBe(b.code);
    expect(err.message).toContain(b.field);
  });
  it.each((policies as any[]).map((p, i): [number, any] => [i, p]))('target-policy digest vector %s', (_i, p: any) => {
    expect(targetPolicyDigest(p.snapshot, crypto)).toBe(p.digest);
    expect(`sha256:${Buffer.from(crypto.sha256(new TextEncoder().encode(p.canonical))).toString('hex')}`).toBe(p.digest);
  });
});
