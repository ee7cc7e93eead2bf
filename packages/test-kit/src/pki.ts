import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A certificate and its private key as PEM files (absolute paths), and their contents. */
export interface CertFiles {
  cert: string;
  key: string;
  certPem: string;
  /** PKCS#8 PEM */
  keyPem: string;
  certDer: Buffer;
}

function openssl(dir: string, args: string[]): Buffer {
  try {
    return execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as { stderr?: Buffer; message: string };
    throw new Error(`openssl ${args[0]}: ${err.stderr?.toString().trim() || err.message}`, { cause: e });
  }
}

function files(dir: string, name: string): CertFiles {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}.key`);
  return {
    cert,
    key,
    certPem: readFileSync(cert, 'utf8'),
    keyPem: readFileSync(key, 'utf8'),
    certDer: openssl(dir, ['x509', '-in', cert, '-outform', 'DER']),
  };
}

/**
 * A self-signed CA made with the OpenSSL CLI in `dir` (`<name>.pem`, `<name>.key`): ECDSA
 * P-256, SHA-256, `CN=<cn>`, basicConstraints CA:TRUE and keyUsage keyCertSign, cRLSign (the
 * shape of the server's per-tenant device CA, contracts §4, and of a TLS CA).
 */
export function makeCa(dir: string, name: string, o: { cn?: string; days?: number } = {}): CertFiles {
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
    '-days',
    String(o.days ?? 30),
    '-sha256',
    '-subj',
    `/CN=${o.cn ?? name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return files(dir, name);
}

/**
 * A leaf certificate `<name>.pem` with a fresh P-256 key `<name>.key` (PKCS#8), issued by
 * `issuer` with the X.509 extension lines `ext` (OpenSSL `-extfile` syntax) and a random serial.
 */
export function issueCert(dir: string, name: string, issuer: Pick<CertFiles, 'cert' | 'key'>, o: { ext: string[]; cn?: string; days?: number }): CertFiles {
  openssl(dir, ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${name}.key`]);
  openssl(dir, ['req', '-new', '-key', `${name}.key`, '-subj', `/CN=${o.cn ?? name}`, '-out', `${name}.csr`]);
  writeFileSync(join(dir, `${name}.ext`), o.ext.join('\n') + '\n');
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    issuer.cert,
    '-CAkey',
    issuer.key,
    '-set_serial',
    `0x${randomBytes(8).toString('hex')}`,
    '-days',
    String(o.days ?? 30),
    '-sha256',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.pem`,
  ]);
  return files(dir, name);
}

/**
 * A device identity issued by `ca` (contracts §4): CN = the device name, one SAN URI
 * `spiffe://<tenant>/device/<device>`, clientAuth, digitalSignature.
 */
export function makeDeviceCert(dir: string, ca: Pick<CertFiles, 'cert' | 'key'>, tenant: string, device: string, o: { days?: number } = {}): CertFiles {
  return issueCert(dir, device, ca, {
    ...o,
    ext: [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=clientAuth',
      `subjectAltName=URI:spiffe://${tenant}/device/${device}`,
    ],
  });
}

/** A TLS server certificate for `names` (`DNS:x` or `IP:1.2.3.4` entries), issued by `ca`. */
export function makeServerCert(dir: string, name: string, ca: Pick<CertFiles, 'cert' | 'key'>, names: string[], o: { days?: number } = {}): CertFiles {
  return issueCert(dir, name, ca, { ...o, ext: [`subjectAltName=${names.join(',')}`, 'extendedKeyUsage=serverAuth'] });
}
