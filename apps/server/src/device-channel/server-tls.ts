import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { webcrypto } from 'node:crypto';
import { encodePem } from '@svc/release-core';
import { x509 } from './x509.js';
import { createCa, issueCertificate, loadCa, P256_KEY } from './pki.js';

/**
 * The DNS name every server TLS certificate carries. Agents verify the server against the
 * CA they pinned at enrollment and use this name for the check (grpc
 * `ssl_target_name_override`), so the device port works behind any address or NAT.
 */
export const DEVICE_CHANNEL_TLS_NAME = 'device-channel.svc.internal';

export interface ServerTls {
  /** CA the devices pin (returned in EnrollResponse.server_ca_der). */
  caDer: Uint8Array;
  certPem: string;
  keyPem: string;
}

/** The server CA's directory: `ca.pem` (certificate) and `ca.key` (PKCS#8 key, 0600). */
export function serverCaDir(dataDir: string): string {
  return join(dataDir, 'ca', 'server');
}

async function readServerCa(dir: string): Promise<{ certDer: Uint8Array; keyPem: string } | undefined> {
  try {
    const certPem = await readFile(join(dir, 'ca.pem'), 'utf8');
    const keyPem = await readFile(join(dir, 'ca.key'), 'utf8');
    const certDer = new Uint8Array(new x509.X509Certificate(certPem).rawData);
    return { certDer, keyPem };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/**
 * The server CA under SVC_DATA_DIR/ca/server (created once, atomically: built in a temp dir
 * and renamed, so two processes starting together end with one CA) and a fresh TLS leaf for
 * this process, issued at every start. Only the CA is shared; leaves need not be.
 */
export async function ensureServerTls(dataDir: string, hosts: string[], now: Date): Promise<ServerTls> {
  const caDir = serverCaDir(dataDir);
  let ca = await readServerCa(caDir);
  if (ca === undefined) {
    await mkdir(join(dataDir, 'ca'), { recursive: true, mode: 0o700 });
    const tmp = await mkdtemp(join(dataDir, 'ca', '.server-'));
    const created = await createCa('svc device-channel server CA', now, 3650);
    await writeFile(join(tmp, 'ca.pem'), encodePem(created.certDer, 'CERTIFICATE'), { mode: 0o644 });
    await writeFile(join(tmp, 'ca.key'), created.keyPem, { mode: 0o600 });
    try {
      await rename(tmp, caDir);
    } catch {
      await rm(tmp, { recursive: true, force: true }); // lost the race: the other CA stands
    }
    ca = await readServerCa(caDir);
    if (ca === undefined) throw new Error(`server CA missing under ${caDir} after creation`);
  }
  const material = await loadCa(ca.certDer, ca.keyPem);
  const keys = await webcrypto.subtle.generateKey(P256_KEY, true, ['sign', 'verify']);
  const names = [...new Set([DEVICE_CHANNEL_TLS_NAME, 'localhost', ...hosts.filter((h) => h && isIP(h) === 0)])];
  const ips = [...new Set(['127.0.0.1', '::1', ...hosts.filter((h) => isIP(h) !== 0)])];
  const leafDer = await issueCertificate(material, {
    subjectCN: DEVICE_CHANNEL_TLS_NAME,
    publicKey: await x509.PublicKey.create(keys.publicKey),
    usage: 'serverAuth',
    dnsNames: names,
    ips,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + 365 * 86_400_000),
  });
  const pkcs8 = new Uint8Array(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return { caDer: ca.certDer, certPem: encodePem(leafDer, 'CERTIFICATE'), keyPem: encodePem(pkcs8, 'PRIVATE KEY') };
}
