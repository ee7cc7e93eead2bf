import { isIP } from 'node:net';
import { join } from 'node:path';
import { createPrivateKey, randomUUID, webcrypto } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import type { WrappedKeys } from '../key-custody/wrapped-keys.js';
import { SERVER_CA_KEY_REF } from './ca-key.js';
import { encodePem } from '@svc/release-core';
import { x509 } from '@svc/release-core/x509';
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

/**
 * `ca.pem` here is the server CA certificate agents pin to enroll (SVC_AGENT_SERVER_CA): public,
 * written at every start from the stored CA. Data directories from before the KEK also kept
 * `ca.key` here (imported at start and removed, key-custody/import-plain-keys.ts).
 */
export function serverCaDir(dataDir: string): string {
  return join(dataDir, 'ca', 'server');
}

/** The server CA's certificate (DER) and key, when stored; KekError when the KEK does not open it. */
export async function readServerCa(keys: WrappedKeys): Promise<{ certDer: Uint8Array; keyPem: string } | undefined> {
  const found = await keys.load(SERVER_CA_KEY_REF);
  if (found === undefined) return undefined;
  if (found.certificate === undefined) throw new Error('the server CA key is stored without its certificate');
  return { certDer: found.certificate, keyPem: found.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString() };
}

/**
 * The server CA, stored wrapped with its certificate in `wrapped_keys` (created once: the
 * first process's insert wins, so processes starting together, on any host, end with one CA)
 * and a fresh TLS leaf for this process, issued at every start and kept in memory only. Only
 * the CA is shared; leaves need not be.
 */
export async function ensureServerTls(wrapped: WrappedKeys, hosts: string[], now: Date, dataDir?: string): Promise<ServerTls> {
  let ca = await readServerCa(wrapped);
  if (ca === undefined) {
    const created = await createCa('svc device-channel server CA', now, 3650);
    await wrapped.create(SERVER_CA_KEY_REF, createPrivateKey({ key: created.keyPem, format: 'pem' }), { certificate: created.certDer });
    ca = await readServerCa(wrapped);
    if (ca === undefined) throw new Error('server CA missing after creation');
  }
  if (dataDir !== undefined) await publishServerCaCert(dataDir, ca.certDer);
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

/** Writes the server CA certificate (public) to `<dataDir>/ca/server/ca.pem` for provisioning agents; atomic, unchanged when equal. */
async function publishServerCaCert(dataDir: string, certDer: Uint8Array): Promise<void> {
  const dir = serverCaDir(dataDir);
  const pem = encodePem(certDer, 'CERTIFICATE');
  const current = await readFile(join(dir, 'ca.pem'), 'utf8').catch(() => undefined);
  if (current === pem) return;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = join(dir, `.ca.pem.${randomUUID()}`);
  await writeFile(tmp, pem, { mode: 0o644 });
  await rename(tmp, join(dir, 'ca.pem'));
}
