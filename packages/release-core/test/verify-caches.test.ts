import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type Envelope,
  type PublicKey,
  type ReleasePayload,
  LIMITS,
  RECEIPT_PAYLOAD_TYPE,
  canonicalize,
  signEnvelope,
  envelopeDigest,
  generateKeyPair,
  nobleCryptoProvider,
  nodeCryptoProvider,
  parseCertificatePem,
  parseEnvelope,
  parsePrivateKeyPem,
  parsePublicKeyPem,
  signReceipt,
  signRelease,
  verifyReceipt,
  verifyRelease,
} from '../src/index.js';
import { keyObjectCacheSize } from '../src/crypto/node.js';
import { releasePayloadCacheSize } from '../src/release/payload-cache.js';
import { cachedCertificate, certificateCacheSize } from '../src/x509/cache.js';
import { loadVector, refusal, vectorsDir } from './helpers/vectors.js';

/*
 * The verify path remembers imported KeyObjects (by key id), parsed device certificates (by
 * their exact DER), validated release payloads (by digest) and what a parsed envelope yields
 * (PAE, signature bytes, digests). These tests hold the caches to their bounds and check that
 * no cache lets one key or certificate stand in for another, and that a second call gives the
 * same answer as the first, refusals included.
 */
const pem = (n: string) => readFileSync(join(vectorsDir, 'keys', n), 'utf8');
const authorizer = parsePrivateKeyPem(pem('authorizer.key.pem'));
const otherAuthorizer = parsePrivateKeyPem(pem('other-authorizer.key.pem'));
const deviceKey = parsePrivateKeyPem(pem('device.key.pem'));
const payloads = loadVector('release-payloads.json');
const receipts = loadVector('receipts.json');
const ten: ReleasePayload = payloads.good.ten;
const ca = parseCertificatePem(receipts.ca_pem);
const now = new Date('2027-06-01T00:00:00Z');
const releaseOpts = (trustedKeys: readonly PublicKey[]) => ({ trustedKeys, tenant: ten.tenant, product: ten.product, now });
const singleReceipt = receipts.good.find((g: { name: string }) => g.name === 'single');
const receiptOpts = { ca, tenant: singleReceipt.verify.tenant, device: singleReceipt.verify.device, now };
const message = Buffer.from('the same message for every key');

/** A key object that claims `claimed`'s key id but carries `actual`'s key. */
function impostor(claimed: PublicKey, actual: PublicKey): PublicKey {
  return Object.freeze({ ...actual, keyid: claimed.keyid });
}

/** The outcome of fn as comparable data: the value, or the refusal's code and message. */
function outcome(fn: () => unknown): unknown {
  try {
    return { ok: fn() };
  } catch (e) {
    const { code, message } = e as { code?: string; message: string };
    return { code, message };
  }
}

describe('KeyObject cache (by key id)', () => {
  it('holds at most LIMITS.keyObjectCacheEntries keys, and an evicted key verifies again', () => {
    const keys = Array.from({ length: LIMITS.keyObjectCacheEntries + 8 }, () => generateKeyPair('ed25519'));
    const sigs = keys.map((k) => nodeCryptoProvider.signEd25519(k, message));
    keys.forEach((k, i) => expect(nodeCryptoProvider.verifyEd25519(k.publicKey, message, sigs[i]!)).toBe(true));
    expect(keyObjectCacheSize()).toBe(LIMITS.keyObjectCacheEntries);
    // the first keys were evicted: verifying with them imports them again, with the same verdicts
    expect(nodeCryptoProvider.verifyEd25519(keys[0]!.publicKey, message, sigs[0]!)).toBe(true);
    expect(nodeCryptoProvider.verifyEd25519(keys[0]!.publicKey, message, sigs[1]!)).toBe(false);
    expect(keyObjectCacheSize()).toBe(LIMITS.keyObjectCacheEntries);
  });

  it('a new PublicKey object of a known key (as read per request) gets the same verdicts', () => {
    const sig = nodeCryptoProvider.signEd25519(authorizer, message);
    expect(nodeCryptoProvider.verifyEd25519(authorizer.publicKey, message, sig)).toBe(true);
    const again = parsePublicKeyPem(authorizer.publicKey.pem);
    expect(again).not.toBe(authorizer.publicKey);
    expect(nodeCryptoProvider.verifyEd25519(again, message, sig)).toBe(true);
    expect(nodeCryptoProvider.verifyEd25519(again, Buffer.from('another message'), sig)).toBe(false);
  });

  it('a key claiming a cached key id is never verified as that key (either order)', () => {
    const real = authorizer.publicKey;
    const fake = impostor(real, otherAuthorizer.publicKey);
    const byReal = nodeCryptoProvider.signEd25519(authorizer, message);
    const byOther = nodeCryptoProvider.signEd25519(otherAuthorizer, message);
    for (let round = 0; round < 2; round++) {
      expect(nodeCryptoProvider.verifyEd25519(real, message, byReal)).toBe(true);
      expect(nodeCryptoProvider.verifyEd25519(fake, message, byReal)).toBe(false);
      expect(nodeCryptoProvider.verifyEd25519(fake, message, byOther)).toBe(true);
      expect(nodeCryptoProvider.verifyEd25519(real, message, byOther)).toBe(false);
    }
    // the same with P-256: a device key claiming the CA key's id
    const caKey = ca.publicKey;
    const fakeCa = impostor(caKey, deviceKey.publicKey);
    const byDevice = nodeCryptoProvider.signP256(deviceKey, message);
    expect(nodeCryptoProvider.verifyP256(fakeCa, message, byDevice)).toBe(true);
    expect(nodeCryptoProvider.verifyP256(caKey, message, byDevice)).toBe(false);
    expect(nodeCryptoProvider.verifyP256(fakeCa, message, byDevice)).toBe(true);
  });

  it('verifyRelease: an impostor with the signer key id refuses what the real key accepted, and back', () => {
    const env = signRelease(ten, authorizer);
    const real = authorizer.publicKey;
    const fake = impostor(real, otherAuthorizer.publicKey);
    expect(verifyRelease(env, releaseOpts([real])).keyid).toBe(real.keyid);
    expect(refusal(() => verifyRelease(env, releaseOpts([fake]))).code).toBe('SIGNATURE_INVALID');
    expect(verifyRelease(env, releaseOpts([real])).keyid).toBe(real.keyid);
    expect(refusal(() => verifyRelease(env, releaseOpts([fake]))).code).toBe('SIGNATURE_INVALID');
  });
});

describe('certificate cache (by exact DER)', () => {
  const der = Buffer.from(JSON.parse(Buffer.from(singleReceipt.envelope.payload, 'base64').toString()).device.certificate as string, 'base64');
  /** the device certificate with the last byte of its signature changed: parses, does not verify */
  const variant = (i: number) => {
    const copy = Buffer.from(der);
    copy[copy.length - 1] = (copy[copy.length - 1]! + 1 + i) % 256;
    return copy;
  };

  it('holds at most LIMITS.certificateCacheEntries certificates', () => {
    const n = LIMITS.certificateCacheEntries + 8;
    for (let i = 0; i < n; i++) {
      const d = Buffer.from(der);
      // vary two bytes of the signature so every DER differs
      d[d.length - 1] = i % 256;
      d[d.length - 2] = (d[d.length - 2]! + Math.floor(i / 256) + 1) % 256;
      const cert = cachedCertificate(d.toString('base64'), () => d);
      expect(Buffer.from(cert.der).equals(d)).toBe(true);
    }
    expect(certificateCacheSize()).toBe(LIMITS.certificateCacheEntries);
  });

  it('a receipt whose certificate differs by one byte from a cached one is refused, before and after', () => {
    const payload = JSON.parse(Buffer.from(singleReceipt.envelope.payload, 'base64').toString());
    const good = signReceipt(payload, deviceKey);
    const tampered = signReceipt({ ...payload, device: { ...payload.device, certificate: variant(0).toString('base64') } }, deviceKey);
    const first = verifyReceipt(good, receiptOpts);
    expect(Buffer.from(first.certificate.der).equals(der)).toBe(true);
    const refusedOnce = refusal(() => verifyReceipt(tampered, receiptOpts));
    expect(refusedOnce.code).toBe('CERT_UNTRUSTED');
    const second = verifyReceipt(good, receiptOpts);
    expect(second.certificate).toBe(first.certificate); // the cache hit
    expect(second.payloadDigest).toBe(first.payloadDigest);
    const refusedAgain = refusal(() => verifyReceipt(tampered, receiptOpts));
    expect({ code: refusedAgain.code, message: refusedAgain.message }).toEqual({ code: refusedOnce.code, message: refusedOnce.message });
  });

  it('a certificate text that is not canonical base64 is refused every time (nothing cached)', () => {
    const payload = JSON.parse(Buffer.from(singleReceipt.envelope.payload, 'base64').toString());
    const b64 = payload.device.certificate as string;
    // the same bytes spelled URL-safe: a different text, refused, never an entry
    const urlSafe = b64.replaceAll('+', '-').replaceAll('/', '_');
    expect(urlSafe).not.toBe(b64);
    // signed as it is (signReceipt would refuse to sign it)
    const env = signEnvelope(RECEIPT_PAYLOAD_TYPE, canonicalize({ ...payload, device: { ...payload.device, certificate: urlSafe } }), deviceKey);
    const size = certificateCacheSize();
    const a = outcome(() => verifyReceipt(env, receiptOpts));
    const b = outcome(() => verifyReceipt(env, receiptOpts));
    expect(a).toMatchObject({ code: 'RECEIPT_INVALID' });
    expect(b).toEqual(a);
    expect(certificateCacheSize()).toBe(size);
  });
});

describe('release payload cache and per-envelope values', () => {
  it('holds at most LIMITS.releasePayloadCacheEntries payloads', () => {
    for (let i = 0; i < LIMITS.releasePayloadCacheEntries + 4; i++) {
      const env = signRelease({ ...ten, release: { ...ten.release, version: `2027.6.${i}` } }, authorizer);
      expect(verifyRelease(env, releaseOpts([authorizer.publicKey])).payload.release.version).toBe(`2027.6.${i}`);
    }
    expect(releasePayloadCacheSize()).toBe(LIMITS.releasePayloadCacheEntries);
  });

  it('verifying one parsed envelope again gives the same result as a fresh parse, with either provider', () => {
    const text = JSON.stringify(signRelease(ten, authorizer));
    const parsed = parseEnvelope(text);
    const keys = [authorizer.publicKey];
    const first = verifyRelease(parsed, releaseOpts(keys));
    const again = verifyRelease(parsed, releaseOpts(keys));
    const fresh = verifyRelease(text, releaseOpts(keys));
    const noble = verifyRelease(parsed, { ...releaseOpts(keys), crypto: nobleCryptoProvider });
    for (const r of [again, fresh, noble]) {
      expect(r.payloadDigest).toBe(first.payloadDigest);
      expect(r.envelopeDigest).toBe(first.envelopeDigest);
      expect(r.keyid).toBe(first.keyid);
      expect(r.payload).toEqual(first.payload);
    }
    expect(envelopeDigest(parsed)).toBe(envelopeDigest(JSON.parse(text) as Envelope));
  });

  it('refusals repeat identically on the same parsed envelope (signature, tenant, type)', () => {
    const env = signRelease(ten, authorizer);
    const badSig = parseEnvelope(
      JSON.stringify({
        ...env,
        signatures: [{ ...env.signatures[0]!, sig: signRelease({ ...ten, release: { ...ten.release, version: '9.9.9' } }, authorizer).signatures[0]!.sig }],
      }),
    );
    const parsed = parseEnvelope(JSON.stringify(env));
    const cases: (() => unknown)[] = [
      () => verifyRelease(badSig, releaseOpts([authorizer.publicKey])),
      () => verifyRelease(parsed, releaseOpts([otherAuthorizer.publicKey])),
      () => verifyRelease(parsed, { ...releaseOpts([authorizer.publicKey]), tenant: '00000000-0000-4000-8000-000000000000' }),
      () => verifyRelease(parsed, { ...releaseOpts([authorizer.publicKey]), now: new Date('2040-01-01T00:00:00Z') }),
      () => verifyReceipt(parsed, receiptOpts),
    ];
    const codes = ['SIGNATURE_INVALID', 'KEY_UNTRUSTED', 'TENANT_MISMATCH', 'EXPIRED', 'PAYLOAD_TYPE_UNKNOWN'];
    cases.forEach((fn, i) => {
      const a = outcome(fn);
      expect(a).toMatchObject({ code: codes[i] });
      // a success in between must not turn a refusal into an acceptance
      expect(verifyRelease(parsed, releaseOpts([authorizer.publicKey])).keyid).toBe(authorizer.publicKey.keyid);
      expect(outcome(fn)).toEqual(a);
    });
  });
});

/*
 * A cache hit must never stand in for a check that depends on the call: the time (expiry), the
 * trust store handed in (CA, trusted keys) and the expected tenant and device are checked on
 * every call, after the cached parse or key import, so what was accepted a moment ago is
 * refused once any of them changed, and accepted again when it changes back.
 */
describe('cache hits never outlive a change of time or trust', () => {
  const otherCa = parseCertificatePem(pem('other-ca.cert.pem'));

  it('receipt: certificate cached, then the certificate expired at `now`: refused; at a valid time accepted again', () => {
    const env = parseEnvelope(JSON.stringify(singleReceipt.envelope));
    const first = verifyReceipt(env, receiptOpts);
    const hit = verifyReceipt(env, receiptOpts);
    expect(hit.certificate).toBe(first.certificate); // served from the certificate cache
    const after = new Date(first.certificate.notAfter.getTime() + 1000);
    expect(refusal(() => verifyReceipt(env, { ...receiptOpts, now: after }))).toMatchObject({ code: 'CERT_EXPIRED' });
    const before = new Date(first.certificate.notBefore.getTime() - 1000);
    expect(refusal(() => verifyReceipt(env, { ...receiptOpts, now: before }))).toMatchObject({ code: 'CERT_EXPIRED' });
    expect(verifyReceipt(env, receiptOpts).certificate).toBe(first.certificate);
  });

  it('receipt: certificate and CA key cached, then the trust store holds another CA only: refused', () => {
    const env = parseEnvelope(JSON.stringify(singleReceipt.envelope));
    verifyReceipt(env, receiptOpts);
    verifyReceipt(env, receiptOpts);
    // the tenant's device CA replaced (a rotation that dropped the old CA): the leaf no longer chains
    expect(refusal(() => verifyReceipt(env, { ...receiptOpts, ca: otherCa }))).toMatchObject({ code: 'CERT_UNTRUSTED' });
    expect(refusal(() => verifyReceipt(env, { ...receiptOpts, ca: [otherCa] }))).toMatchObject({ code: 'CERT_UNTRUSTED' });
    // the old CA still trusted beside the new one: accepted
    expect(verifyReceipt(env, { ...receiptOpts, ca: [otherCa, ca] }).payload.device.name).toBe(singleReceipt.verify.device);
    // the same through the thread-free server path: the connection certificate pre-verified
    // against the CA does not let a trust store without that CA accept it
    const der = Buffer.from(verifyReceipt(env, receiptOpts).certificate.der);
    expect(refusal(() => verifyReceipt(env, { ...receiptOpts, ca: otherCa, connectionCertificate: der, connectionCertificateVerified: true }))).toMatchObject({
      code: 'CERT_UNTRUSTED',
    });
  });

  it('receipt: the CA itself expired after its key was cached: refused', () => {
    const env = parseEnvelope(JSON.stringify(singleReceipt.envelope));
    verifyReceipt(env, receiptOpts);
    const afterCa = new Date(ca.notAfter.getTime() + 1000);
    expect(refusal(() => verifyReceipt(env, { ...receiptOpts, now: afterCa }))).toMatchObject({ code: 'CERT_EXPIRED' });
  });

  it('release: key object and payload cached, then the key is no longer trusted: refused; trusted again: accepted', () => {
    const env = parseEnvelope(JSON.stringify(signRelease(ten, authorizer)));
    const keys = [authorizer.publicKey];
    expect(verifyRelease(env, releaseOpts(keys)).keyid).toBe(authorizer.publicKey.keyid);
    expect(verifyRelease(env, releaseOpts(keys)).keyid).toBe(authorizer.publicKey.keyid);
    // the authorizer key revoked: the trust store handed in no longer has it
    expect(refusal(() => verifyRelease(env, releaseOpts([])))).toMatchObject({ code: 'KEY_UNTRUSTED' });
    expect(refusal(() => verifyRelease(env, releaseOpts([otherAuthorizer.publicKey])))).toMatchObject({ code: 'KEY_UNTRUSTED' });
    // a key read anew from the database (new object, same key): trusted again
    expect(verifyRelease(env, releaseOpts([parsePublicKeyPem(authorizer.publicKey.pem)])).keyid).toBe(authorizer.publicKey.keyid);
  });

  it('release: payload cached as valid, then the validity window has passed: refused', () => {
    const env = parseEnvelope(JSON.stringify(signRelease(ten, authorizer)));
    const keys = [authorizer.publicKey];
    verifyRelease(env, releaseOpts(keys));
    const expired = new Date(Date.parse(ten.validity.not_after) + 3600_000);
    expect(refusal(() => verifyRelease(env, { ...releaseOpts(keys), now: expired }))).toMatchObject({ code: 'EXPIRED' });
    expect(verifyRelease(env, releaseOpts(keys)).keyid).toBe(authorizer.publicKey.keyid);
  });
});
