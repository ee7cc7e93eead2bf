import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Certificate,
  type CryptoProvider,
  certificateSpki,
  deviceIdentity,
  nobleCryptoProvider,
  nodeCryptoProvider,
  parseCertificateDer,
  parseCertificatePem,
  verifyCertificateChain,
} from '../src/index.js';
import { openssl, opensslStatus, requireTool, withTempDir } from './helpers/tools.js';
import { refusal } from './helpers/vectors.js';

const TENANT = '6f1c2a4e-8b3d-4c7a-9e2f-1a2b3c4d5e6f';

/** Certificates made by the OpenSSL CLI, in a temp dir. */
function pki(dir: string) {
  const f = (n: string) => join(dir, n);
  const genkey = (name: string, alg: 'ec' | 'ed25519' = 'ec') =>
    openssl(['genpkey', ...(alg === 'ec' ? ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'] : ['-algorithm', 'ed25519']), '-out', f(`${name}.key`)]);
  const ca = (name: string, ext: string[], alg: 'ec' | 'ed25519' = 'ec') => {
    genkey(name, alg);
    openssl([
      'req',
      '-x509',
      '-new',
      '-key',
      f(`${name}.key`),
      '-subj',
      `/CN=${name}`,
      '-days',
      '30',
      ...ext.flatMap((e) => ['-addext', e]),
      '-out',
      f(`${name}.pem`),
    ]);
  };
  const leaf = (name: string, issuer: string, cn: string, san: string | undefined, days = '30', extra: string[] = []) => {
    genkey(name);
    openssl(['req', '-new', '-key', f(`${name}.key`), '-subj', `/CN=${cn}`, '-out', f(`${name}.csr`)]);
    writeFileSync(
      f(`${name}.ext`),
      ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature', ...(san ? [`subjectAltName=${san}`] : []), ...extra].join('\n'),
    );
    openssl([
      'x509',
      '-req',
      '-in',
      f(`${name}.csr`),
      '-CA',
      f(`${issuer}.pem`),
      '-CAkey',
      f(`${issuer}.key`),
      '-CAcreateserial',
      '-CAserial',
      f('serial'),
      '-days',
      days,
      '-extfile',
      f(`${name}.ext`),
      '-out',
      f(`${name}.pem`),
    ]);
  };
  return { f, ca, leaf };
}

describe.runIf(requireTool('openssl'))('X.509 against the OpenSSL CLI', () => {
  const tmp = withTempDir();
  let p: ReturnType<typeof pki>;
  const cert = (n: string): Certificate => parseCertificatePem(readFileSync(p.f(`${n}.pem`), 'utf8'));
  beforeAll(() => {
    p = pki(tmp.dir);
    p.ca('ca', ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign,cRLSign']);
    p.ca('other-ca', ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign,cRLSign']);
    p.ca('not-ca', ['basicConstraints=critical,CA:FALSE']);
    p.ca('ed-ca', ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign'], 'ed25519');
    p.leaf('dev', 'ca', 'edge-01', `URI:spiffe://${TENANT}/device/edge-01`);
    p.leaf('dev-other', 'other-ca', 'edge-01', `URI:spiffe://${TENANT}/device/edge-01`);
    p.leaf('dev-notca', 'not-ca', 'edge-01', `URI:spiffe://${TENANT}/device/edge-01`);
    p.leaf('dev-ed', 'ed-ca', 'edge-01', `URI:spiffe://${TENANT}/device/edge-01`);
    p.leaf('dev-crit', 'ca', 'edge-01', `URI:spiffe://${TENANT}/device/edge-01`, '30', ['1.2.3.4=critical,ASN1:NULL']);
    p.leaf('dev-dns', 'ca', 'edge-01', `DNS:edge-01.example,URI:spiffe://${TENANT}/device/edge-01,email:a@b.c`);
    p.leaf('dev-eku', 'ca', 'edge-01', `URI:spiffe://${TENANT}/device/edge-01`, '30', ['extendedKeyUsage=clientAuth,1.3.6.1.5.5.7.3.4']);
  });
  afterAll(() => tmp.cleanup());

  const at = (d: Date) => String(Math.floor(d.getTime() / 1000));
  const osslVerify = (ca: string, leaf: string, when: Date) =>
    opensslStatus(['verify', '-attime', at(when), '-x509_strict', '-CAfile', p.f(`${ca}.pem`), p.f(`${leaf}.pem`)]).status === 0;

  it('reads the fields OpenSSL wrote', () => {
    const c = cert('dev');
    expect(c.subjectCN).toBe('edge-01');
    expect(c.issuerCN).toBe('ca');
    expect(c.sanUris).toEqual([`spiffe://${TENANT}/device/edge-01`]);
    expect(c.isCA).toBe(false);
    expect(cert('ca').isCA).toBe(true);
    expect(c.publicKey.alg).toBe('p256');
    expect(c.signatureAlgorithm).toBe('ecdsa-with-SHA256');
    const text = openssl(['x509', '-in', p.f('dev.pem'), '-noout', '-serial', '-enddate']).toString();
    expect(BigInt(`0x${/serial=(\w+)/.exec(text)![1]}`)).toBe(BigInt(`0x${c.serialNumber}`));
    expect(new Date(/notAfter=(.*)/.exec(text)![1]!).getTime()).toBe(c.notAfter.getTime());
    expect(deviceIdentity(c)).toEqual({ tenant: TENANT, device: 'edge-01' });
    expect(cert('dev-dns').sanUris).toEqual([`spiffe://${TENANT}/device/edge-01`]);
    expect(cert('dev-ed').signatureAlgorithm).toBe('ed25519');
    // extendedKeyUsage: the purposes in order, absent when the certificate has none
    expect(cert('dev-eku').extendedKeyUsage).toEqual(['1.3.6.1.5.5.7.3.2', '1.3.6.1.5.5.7.3.4']);
    expect(c.extendedKeyUsage).toBeUndefined();
  });

  const providers: [string, CryptoProvider][] = [
    ['node', nodeCryptoProvider],
    ['noble', nobleCryptoProvider],
  ];
  describe.each(providers)('chains agree with `openssl verify` (%s provider)', (_n, crypto) => {
    const now = () => new Date(cert('dev').notBefore.getTime() + 86400_000);
    const cases: [string, string, string, string | undefined, () => Date][] = [
      ['P-256 CA and device', 'ca', 'dev', undefined, now],
      ['Ed25519 CA, P-256 device', 'ed-ca', 'dev-ed', undefined, now],
      ['device of another CA', 'ca', 'dev-other', 'CERT_UNTRUSTED', now],
      ['issuer is not a CA', 'not-ca', 'dev-notca', 'CERT_UNTRUSTED', now],
      ['expired', 'ca', 'dev', 'CERT_EXPIRED', () => new Date(cert('dev').notAfter.getTime() + 1000)],
      ['not yet valid', 'ca', 'dev', 'CERT_EXPIRED', () => new Date(cert('dev').notBefore.getTime() - 1000)],
      ['unknown critical extension', 'ca', 'dev-crit', 'CERT_INVALID', now],
    ];
    it.each(cases)('%s', (_name, ca, leaf, code, when) => {
      const ok = osslVerify(ca, leaf, when());
      expect(ok).toBe(code === undefined);
      if (code === undefined) verifyCertificateChain(cert(leaf), cert(ca), { now: when(), crypto });
      else expect(refusal(() => verifyCertificateChain(cert(leaf), cert(ca), { now: when(), crypto })).code).toBe(code);
    });
    it('a flipped bit in the signature is refused by both', () => {
      const der = new Uint8Array(cert('dev').der);
      der[der.length - 5]! ^= 1;
      writeFileSync(p.f('tampered.pem'), `-----BEGIN CERTIFICATE-----\n${Buffer.from(der).toString('base64')}\n-----END CERTIFICATE-----\n`);
      expect(osslVerify('ca', 'tampered', now())).toBe(false);
      const code = (() => {
        try {
          verifyCertificateChain(parseCertificateDer(der), cert('ca'), { now: now(), crypto });
          return 'accepted';
        } catch (e) {
          return (e as { code: string }).code;
        }
      })();
      expect(['CERT_UNTRUSTED', 'CERT_INVALID']).toContain(code);
    });
  });

  it('certificateSpki is the key the full parse reads, for every certificate OpenSSL wrote', () => {
    for (const name of ['dev', 'ca', 'dev-ed', 'ed-ca', 'dev-dns', 'dev-crit'])
      expect(Buffer.from(certificateSpki(cert(name).der))).toEqual(Buffer.from(cert(name).publicKey.spki));
    expect(refusal(() => certificateSpki(new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x00]))).code).toBe('CERT_INVALID');
  });

  it('parse failures are CERT_INVALID', () => {
    expect(refusal(() => parseCertificateDer(new Uint8Array([0x30, 0x03, 0x02, 0x01]))).code).toBe('CERT_INVALID');
    expect(refusal(() => parseCertificatePem('-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n')).code).toBe('CERT_INVALID');
    const der = cert('dev').der;
    expect(refusal(() => parseCertificateDer(der.subarray(0, der.length - 1))).code).toBe('CERT_INVALID');
    expect(refusal(() => parseCertificateDer(new Uint8Array([...der, 0]))).code).toBe('CERT_INVALID');
  });
});
