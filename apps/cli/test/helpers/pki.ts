import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { openssl } from './cli.js';

/** An OpenSSL-made per-tenant device CA (ECDSA P-256), as contracts §4 describes it. */
export async function makeCa(dir: string, name: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}.key`);
  openssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    key,
    '-out',
    cert,
    '-days',
    '365',
    '-sha256',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { cert, key };
}

/**
 * A device identity issued by `ca`: P-256 key (PKCS#8 PEM), certificate with CN = device
 * name and one SAN URI spiffe://<tenant>/device/<name> (contracts §4).
 */
export async function makeDevice(
  dir: string,
  ca: { cert: string; key: string },
  tenant: string,
  device: string,
): Promise<{ cert: string; key: string; keyPem: string; certDerBase64: string }> {
  const key = join(dir, `${device}.key`);
  const csr = join(dir, `${device}.csr`);
  const ext = join(dir, `${device}.ext`);
  const cert = join(dir, `${device}.pem`);
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', key]);
  openssl(['req', '-new', '-key', key, '-subj', `/CN=${device}`, '-out', csr]);
  await writeFile(
    ext,
    [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=clientAuth',
      `subjectAltName=URI:spiffe://${tenant}/device/${device}`,
    ].join('\n') + '\n',
  );
  openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    '-set_serial',
    `0x${randomBytes(8).toString('hex')}`,
    '-days',
    '30',
    '-sha256',
    '-extfile',
    ext,
    '-out',
    cert,
  ]);
  const der = openssl(['x509', '-in', cert, '-outform', 'DER']);
  return { cert, key, keyPem: await readFile(key, 'utf8'), certDerBase64: der.toString('base64') };
}
