import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type Envelope,
  RECEIPT_PAYLOAD_TYPE,
  type ReceiptPayload,
  canonicalize,
  nobleCryptoProvider,
  nodeCryptoProvider,
  pae,
  parseCertificatePem,
  parseCertificatesPem,
  parsePrivateKeyPem,
  LIMITS,
  signReceipt,
  validateReceiptPayload,
  verifyReceipt,
} from '../src/index.js';
import { openssl, opensslStatus, requireTool, withTempDir } from './helpers/tools.js';
import { loadVector, refusal, vectorsDir } from './helpers/vectors.js';

const receipts = loadVector('receipts.json');
const key = (n: string) => join(vectorsDir, 'keys', n);
const deviceKey = parsePrivateKeyPem(readFileSync(key('device.key.pem'), 'utf8'));
const payloadOf = (env: Envelope): ReceiptPayload => JSON.parse(Buffer.from(env.payload, 'base64').toString());
const single = payloadOf(receipts.good.find((g: any) => g.name === 'single').envelope);
const multi = payloadOf(receipts.good.find((g: any) => g.name === 'multi').envelope);
const osr = payloadOf(receipts.good.find((g: any) => g.name === 'os').envelope);
const ca = parseCertificatePem(receipts.ca_pem);
const opts = { ca, tenant: single.tenant, device: 'edge-01', now: new Date('2027-06-01T00:00:00Z') };

describe('receipt payload rules', () => {
  const bad: [string, unknown, string][] = [
    ['transaction receipt with a top-level rollout', { ...multi, rollout: 'x' }, 'rollout'],
    ['single receipt without rollout', { ...single, rollout: undefined }, 'rollout'],
    ['member count differs', { ...multi, transaction: { ...multi.transaction, member_count: 4 } }, 'members'],
    ['members out of position order', { ...multi, members: [multi.members![1], multi.members![0], multi.members![2]] }, 'members[0].position'],
    ['duplicate member', { ...multi, members: [multi.members![0], { ...multi.members![0], position: 1 }, multi.members![2]] }, 'members[1].component'],
    [
      'activated with a rolled-back member',
      { ...multi, members: multi.members!.map((m, i) => (i === 2 ? { ...m, verdict: 'rolled-back', resulting_digest: m.previous_digest } : m)) },
      'activation',
    ],
    ['rolled back with a committed member', { ...multi, activation: 'rolled-back', health: 'unhealthy' }, 'activation'],
    [
      'committed member not running its candidate',
      { ...multi, members: multi.members!.map((m, i) => (i === 0 ? { ...m, resulting_digest: m.previous_digest } : m)) },
      'members[0].resulting_digest',
    ],
    ['bad verdict', { ...multi, members: multi.members!.map((m, i) => (i === 0 ? { ...m, verdict: 'done' } : m)) }, 'members[0].verdict'],
    ['os result with a bad mark', { ...osr, os: { ...osr.os, mark: 'maybe' } }, 'os.mark'],
    ['os result with an unknown field', { ...osr, os: { ...osr.os, extra: 1 } }, 'os.extra'],
    ['timestamp not UTC', { ...single, timestamp: '2027-06-01T00:10:00+01:00' }, 'timestamp'],
    ['certificate not base64', { ...single, device: { ...single.device, certificate: 'a b' } }, 'device.certificate'],
    ['unknown activation', { ...single, activation: 'done' }, 'activation'],
  ];
  it.each(bad)('%s -> RECEIPT_INVALID at %s', (_n, value, path) => {
    const err = refusal(() => validateReceiptPayload(JSON.parse(JSON.stringify(value))));
    expect(err.code).toBe('RECEIPT_INVALID');
    expect(err.issues.map((i) => i.path)).toContain(path);
  });
  it('first install: previous_digest null', () => expect(() => validateReceiptPayload(single)).not.toThrow());
});

describe('verifyReceipt against several CAs (a device CA rotation keeps the retired one)', () => {
  const caPem = readFileSync(key('device-ca.cert.pem'), 'utf8');
  const otherPem = readFileSync(key('other-ca.cert.pem'), 'utf8');
  const otherCa = parseCertificatePem(otherPem);
  const fromOther = receipts.bad.find((b: any) => b.name === 'certificate from another CA').envelope;
  const good = receipts.good.find((g: any) => g.name === 'single').envelope;

  it('the CA that issued the certificate is the anchor, wherever it is in the list', () => {
    expect(verifyReceipt(good, { ...opts, ca: [otherCa, ca] }).certificate.subjectCN).toBe('edge-01');
    expect(verifyReceipt(fromOther, { ...opts, ca: [ca, otherCa] }).certificate.subjectCN).toBe('edge-01');
    // without the CA that issued it: refused as with one CA
    expect(refusal(() => verifyReceipt(fromOther, { ...opts, ca: [ca] })).code).toBe('CERT_UNTRUSTED');
    expect(refusal(() => verifyReceipt(good, { ...opts, ca: [otherCa] })).code).toBe('CERT_UNTRUSTED');
    expect(refusal(() => verifyReceipt(good, { ...opts, ca: [] })).code).toBe('CERT_UNTRUSTED');
    expect(refusal(() => verifyReceipt(good, { ...opts, ca: new Array(LIMITS.deviceCaCertificates + 1).fill(ca) })).code).toBe('SIZE_LIMIT');
  });

  it('parseCertificatesPem reads a bundle, at most LIMITS.deviceCaCertificates certificates', () => {
    const bundle = parseCertificatesPem(`# current\n${caPem}\n# retired\n${otherPem}`);
    expect(bundle.map((c) => c.subjectCN)).toEqual([ca.subjectCN, otherCa.subjectCN]);
    expect(parseCertificatesPem(caPem)).toHaveLength(1);
    expect(refusal(() => parseCertificatesPem(caPem.repeat(LIMITS.deviceCaCertificates + 1))).code).toBe('SIZE_LIMIT');
    expect(refusal(() => parseCertificatesPem('not a certificate')).code).toBe('CERT_INVALID');
  });
});

describe('verifyReceipt details', () => {
  it('connectionCertificate equal to the embedded certificate is accepted', () => {
    const env = signReceipt(single, deviceKey);
    const der = new Uint8Array(Buffer.from(single.device.certificate, 'base64'));
    expect(verifyReceipt(env, { ...opts, connectionCertificate: der }).certificate.subjectCN).toBe('edge-01');
  });
  it('connectionCertificateVerified: the CA signature is not checked again, the rest of the certificate still is', () => {
    const env = signReceipt(single, deviceKey);
    const der = new Uint8Array(Buffer.from(single.device.certificate, 'base64'));
    const counting = () => {
      const keys: string[] = [];
      const crypto = {
        ...nodeCryptoProvider,
        verifyP256: (k: any, m: Uint8Array, s: Uint8Array) => (keys.push(k.keyid), nodeCryptoProvider.verifyP256(k, m, s)),
      };
      return { keys, crypto };
    };
    const both = counting();
    verifyReceipt(env, { ...opts, connectionCertificate: der, crypto: both.crypto });
    expect(both.keys).toEqual([ca.publicKey.keyid, deviceKey.publicKey.keyid]);
    const deviceOnly = counting();
    verifyReceipt(env, { ...opts, connectionCertificate: der, connectionCertificateVerified: true, crypto: deviceOnly.crypto });
    expect(deviceOnly.keys).toEqual([deviceKey.publicKey.keyid]);
    // without the connection's certificate to compare with, the flag vouches for nothing
    const noConnection = counting();
    verifyReceipt(env, { ...opts, connectionCertificateVerified: true, crypto: noConnection.crypto });
    expect(noConnection.keys).toEqual([ca.publicKey.keyid, deviceKey.publicKey.keyid]);
    // validity, names and the device signature are still checked
    expect(
      refusal(() => verifyReceipt(env, { ...opts, now: new Date('2100-01-01T00:00:00Z'), connectionCertificate: der, connectionCertificateVerified: true }))
        .code,
    ).toBe('CERT_EXPIRED');
    expect(refusal(() => verifyReceipt(env, { ...opts, device: 'edge-02', connectionCertificate: der, connectionCertificateVerified: true })).code).toBe(
      'CERT_IDENTITY_MISMATCH',
    );
    const tampered = {
      ...env,
      signatures: [{ ...env.signatures[0]!, sig: signReceipt({ ...single, timestamp: '2027-06-01T00:10:09Z' }, deviceKey).signatures[0]!.sig }],
    };
    expect(() => verifyReceipt(tampered, { ...opts, connectionCertificate: der, connectionCertificateVerified: true })).toThrow();
    expect(refusal(() => verifyReceipt(env, { ...opts, connectionCertificate: new Uint8Array(der.length), connectionCertificateVerified: true })).code).toBe(
      'CERT_IDENTITY_MISMATCH',
    );
  });
  it('signReceipt refuses an Ed25519 key', () => {
    expect(refusal(() => signReceipt(single, parsePrivateKeyPem(readFileSync(key('authorizer.key.pem'), 'utf8')))).code).toBe('KEY_INVALID');
  });
  it('refuses an oversized receipt before parsing', () => {
    const env = signReceipt(single, deviceKey);
    expect(refusal(() => verifyReceipt(JSON.stringify(env), { ...opts, maxBytes: 1000 })).code).toBe('SIZE_LIMIT');
  });
});

describe.runIf(requireTool('openssl'))('receipt signatures interoperate with the OpenSSL CLI', () => {
  const tmp = withTempDir();
  afterAll(() => tmp.cleanup());
  const f = (n: string) => join(tmp.dir, n);
  it.each([
    ['node', nodeCryptoProvider],
    ['noble', nobleCryptoProvider],
  ] as const)('openssl dgst -sha256 -verify accepts our receipt signature over PAE (%s)', (_n, crypto) => {
    openssl(['pkey', '-in', key('device.key.pem'), '-pubout', '-out', f('dev.pub')]);
    for (let i = 0; i < 4; i++) {
      const env = signReceipt({ ...single, timestamp: `2027-06-01T00:10:0${i}Z` }, deviceKey, { crypto });
      writeFileSync(f('pae'), pae(env.payloadType, Buffer.from(env.payload, 'base64')));
      writeFileSync(f('sig'), Buffer.from(env.signatures[0]!.sig, 'base64'));
      expect(opensslStatus(['dgst', '-sha256', '-verify', f('dev.pub'), '-signature', f('sig'), f('pae')]).status).toBe(0);
      writeFileSync(f('pae'), pae(env.payloadType, Buffer.from(`${Buffer.from(env.payload, 'base64').toString()} `)));
      expect(opensslStatus(['dgst', '-sha256', '-verify', f('dev.pub'), '-signature', f('sig'), f('pae')]).status).not.toBe(0);
    }
  });
  it('a receipt signed by `openssl dgst -sha256 -sign` verifies with both providers (high and low S)', () => {
    const bytes = canonicalize(single);
    writeFileSync(f('pae2'), pae(RECEIPT_PAYLOAD_TYPE, bytes));
    for (let i = 0; i < 8; i++) {
      const sig = openssl(['dgst', '-sha256', '-sign', key('device.key.pem'), f('pae2')]);
      const env: Envelope = {
        payloadType: RECEIPT_PAYLOAD_TYPE,
        payload: Buffer.from(bytes).toString('base64'),
        signatures: [{ keyid: deviceKey.publicKey.keyid, sig: sig.toString('base64') }],
      };
      for (const crypto of [nodeCryptoProvider, nobleCryptoProvider]) expect(verifyReceipt(env, { ...opts, crypto }).payload.rollout).toBe(single.rollout);
    }
  });
});
