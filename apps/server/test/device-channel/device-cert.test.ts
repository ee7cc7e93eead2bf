import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { createPublicKey, ECDH, generateKeyPairSync, sign, X509Certificate, type KeyObject } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';
import { encodePem } from '@svc/release-core';
import { describe, expect, it } from 'vitest';
import { issueLeaf, readCsr } from '../../src/device-channel/device-cert.js';
import { seq, tlv } from '@svc/release-core/der';
import { createCa, loadCa } from '../../src/device-channel/pki.js';
import { requireTool } from '../../../../vitest.shared.js';
import { csrFor, newDeviceKey } from '../fixtures/device-channel.js';

/**
 * The hand-written DER of the device-certificate path (device-cert.ts) read back by three
 * independent parsers (node:crypto, @peculiar/x509, openssl), and CSRs that must be refused.
 */
describe('device certificates in DER', () => {
  const now = new Date('2026-06-01T12:00:00Z');

  async function issued() {
    const created = await createCa('svc device CA test', now, 3650);
    const ca = await loadCa(created.certDer, created.keyPem);
    const key = await newDeviceKey();
    const csr = readCsr(await csrFor(key, 'gw-0001'));
    const leaf = issueLeaf(ca.signer, {
      subjectCN: csr.commonName,
      spki: csr.spki,
      usage: 'clientAuth',
      sanUris: ['spiffe://11111111-1111-4111-8111-111111111111/device/gw-0001'],
      notBefore: now,
      notAfter: new Date('2051-01-01T00:00:00Z'),
    });
    return { ca, created, leaf };
  }

  it('a leaf that node:crypto and @peculiar/x509 read as the CA issued it, with the contracts §4 identity', async () => {
    const { ca, created, leaf } = await issued();
    const n = new X509Certificate(leaf.der);
    const caCert = new X509Certificate(created.certDer);
    expect(n.subject).toBe('CN=gw-0001');
    expect(n.subjectAltName).toBe('URI:spiffe://11111111-1111-4111-8111-111111111111/device/gw-0001');
    expect(n.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(n.ca).toBe(false);
    expect(n.checkIssued(caCert) && n.verify(caCert.publicKey)).toBe(true);
    expect(n.serialNumber.toLowerCase()).toBe(leaf.serial);
    expect(new Date(n.validFrom).toISOString()).toBe(now.toISOString());
    // after 2049: GeneralizedTime
    expect(new Date(n.validTo).toISOString()).toBe('2051-01-01T00:00:00.000Z');
    const p = new x509.X509Certificate(leaf.der);
    expect(await p.verify({ publicKey: ca.cert.publicKey, signatureOnly: true })).toBe(true);
    expect(p.getExtension(x509.BasicConstraintsExtension)?.critical).toBe(true);
    expect(p.getExtension(x509.KeyUsagesExtension)?.usages).toBe(x509.KeyUsageFlags.digitalSignature);
    const ski = ca.cert.getExtension(x509.SubjectKeyIdentifierExtension)!.keyId;
    expect(p.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId).toBe(ski);
  });

  it.runIf(requireTool('openssl'))('openssl verifies the chain for TLS client use', async () => {
    const { created, leaf } = await issued();
    const dir = await mkdtemp(join(tmpdir(), 'svc-der-'));
    try {
      await writeFile(join(dir, 'ca.pem'), encodePem(created.certDer, 'CERTIFICATE'));
      await writeFile(join(dir, 'leaf.pem'), encodePem(leaf.der, 'CERTIFICATE'));
      const out = execFileSync(
        'openssl',
        ['verify', '-attime', String(now.getTime() / 1000 + 60), '-purpose', 'sslclient', '-CAfile', join(dir, 'ca.pem'), join(dir, 'leaf.pem')],
        {
          encoding: 'utf8',
        },
      );
      expect(out.trim()).toBe(`${join(dir, 'leaf.pem')}: OK`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses CSRs: trailing bytes, a non-minimal length, a changed subject (signature), a truncated one', async () => {
    const der = await csrFor(await newDeviceKey(), 'gw-0002');
    expect(readCsr(der).commonName).toBe('gw-0002');
    expect(() => readCsr(Buffer.concat([der, Buffer.from([0])]))).toThrow(/csr_der: not a DER PKCS#10 certificate request \(not one SEQUENCE\)/);
    // the outer length in long form although it fits the short form is not DER
    const long = Buffer.from(der);
    expect(long[1]).toBe(0x81);
    const nonMinimal = Buffer.concat([Buffer.from([0x30, 0x82, 0x00, long[2]!]), long.subarray(3)]);
    expect(() => readCsr(nonMinimal)).toThrow(/not a DER PKCS#10/);
    const renamed = Buffer.from(der);
    const at = renamed.indexOf(Buffer.from('gw-0002'));
    renamed[at + 6] = '3'.charCodeAt(0);
    expect(() => readCsr(renamed)).toThrow(/csr_der: signature does not verify/);
    expect(() => readCsr(der.subarray(0, der.length - 10))).toThrow(/not a DER PKCS#10/);
  });

  /** A CSR for CN=`cn` carrying `spki` as its key, signed (ecdsa-with-SHA256) by `signer`. */
  function handMadeCsr(spki: Uint8Array, signer: KeyObject, cn: string): Buffer {
    const subject = seq(tlv(0x31, seq(Buffer.from('0603550403', 'hex'), tlv(0x0c, Buffer.from(cn, 'utf8')))));
    const info = seq(Buffer.from('020100', 'hex'), subject, spki, Buffer.from('a000', 'hex'));
    const sigAlg = Buffer.from('300a06082a8648ce3d040302', 'hex');
    return Buffer.from(seq(info, sigAlg, tlv(0x03, Buffer.from([0]), sign('sha256', info, signer))));
  }

  it('reads the P-256 key in either point form and refuses a point that is not on the curve', () => {
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const spki = publicKey.export({ format: 'der', type: 'spki' });
    expect(spki.length).toBe(91);
    expect(readCsr(handMadeCsr(spki, privateKey, 'gw-0003'))).toEqual({ commonName: 'gw-0003', spki: new Uint8Array(spki) });

    // the same key with its point compressed (02/03 || x)
    const point = spki.subarray(spki.length - 65);
    const compressed = ECDH.convertKey(point, 'prime256v1', undefined, undefined, 'compressed') as Buffer;
    const compressedSpki = seq(
      seq(Buffer.from('06072a8648ce3d0201', 'hex'), Buffer.from('06082a8648ce3d030107', 'hex')),
      tlv(0x03, Buffer.from([0]), compressed),
    );
    expect(createPublicKey({ key: Buffer.from(compressedSpki), format: 'der', type: 'spki' }).export({ format: 'jwk' })).toEqual(
      publicKey.export({ format: 'jwk' }),
    );
    expect(readCsr(handMadeCsr(compressedSpki, privateKey, 'gw-0004')).commonName).toBe('gw-0004');

    // y changed: no longer a point of P-256
    const offCurve = Buffer.from(spki);
    offCurve[offCurve.length - 1] = offCurve.at(-1)! ^ 1;
    expect(() => readCsr(handMadeCsr(offCurve, privateKey, 'gw-0005'))).toThrow(/^csr_der: not a DER PKCS#10 certificate request \(public key: /);

    // another curve in the same shape of SubjectPublicKeyInfo
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' });
    expect(() => readCsr(handMadeCsr(p384.publicKey.export({ format: 'der', type: 'spki' }), p384.privateKey, 'gw-0006'))).toThrow(
      /^csr_der: key must be ECDSA P-256, got ec secp384r1$/,
    );
    // a CSR signed by another key than the one it carries
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(() => readCsr(handMadeCsr(spki, other.privateKey, 'gw-0007'))).toThrow(/^csr_der: signature does not verify/);
  });
});
