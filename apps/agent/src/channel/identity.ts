import { webcrypto, X509Certificate } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodePem, encodePem } from '@svc/release-core';
import { writeFileAtomic } from '../journal/io.js';

const P256_KEY = { name: 'ECDSA', namedCurve: 'P-256' } as const;

/** The device's identity as kept under `<dataDir>/identity/` (key 0600, never sent anywhere). */
export interface DeviceIdentityFiles {
  tenantId: string;
  deviceName: string;
  keyPem: string;
  certPem: string;
  deviceCaPem: string;
  /** The server CA pinned at enrollment: the only CA the agent trusts for the channel. */
  serverCaPem: string;
  notAfter: Date;
}

/** A fresh ECDSA P-256 identity key (contracts §4), made on the device. */
export async function generateIdentityKey(): Promise<{ keyPem: string; keys: webcrypto.CryptoKeyPair }> {
  const keys = await webcrypto.subtle.generateKey(P256_KEY, true, ['sign', 'verify']);
  const pkcs8 = new Uint8Array(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return { keyPem: encodePem(pkcs8, 'PRIVATE KEY'), keys };
}

/** Re-imports a stored PKCS#8 key (for a renewal CSR with the same key). */
export async function importIdentityKey(keyPem: string): Promise<webcrypto.CryptoKeyPair> {
  const der = decodePem(keyPem, 'PRIVATE KEY');
  const privateKey = await webcrypto.subtle.importKey('pkcs8', der, P256_KEY, true, ['sign']);
  // webcrypto derives the public half from the JWK of the private key
  const jwk = await webcrypto.subtle.exportKey('jwk', privateKey);
  const publicKey = await webcrypto.subtle.importKey('jwk', { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, P256_KEY, true, ['verify']);
  return { privateKey, publicKey };
}

export function certNotAfter(certPem: string): Date {
  return new Date(new X509Certificate(certPem).validTo);
}

const FILES = { key: 'device.key', cert: 'device.pem', deviceCa: 'device-ca.pem', serverCa: 'server-ca.pem', meta: 'identity.json' } as const;

/** Persists the identity atomically; the key file is 0600. */
export async function saveIdentity(dataDir: string, id: DeviceIdentityFiles): Promise<void> {
  const dir = join(dataDir, 'identity');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFileAtomic(join(dir, FILES.key), Buffer.from(id.keyPem)); // 0600 (writeFileAtomic)
  await writeFileAtomic(join(dir, FILES.cert), Buffer.from(id.certPem));
  await writeFileAtomic(join(dir, FILES.deviceCa), Buffer.from(id.deviceCaPem));
  await writeFileAtomic(join(dir, FILES.serverCa), Buffer.from(id.serverCaPem));
  // identity.json last: its presence means the identity is complete
  await writeFileAtomic(join(dir, FILES.meta), Buffer.from(JSON.stringify({ tenant_id: id.tenantId, device_name: id.deviceName })));
}

/** The stored identity, or undefined when the device has not enrolled yet. */
export async function loadIdentity(dataDir: string): Promise<DeviceIdentityFiles | undefined> {
  const dir = join(dataDir, 'identity');
  let meta: { tenant_id?: unknown; device_name?: unknown };
  try {
    meta = JSON.parse(await readFile(join(dir, FILES.meta), 'utf8')) as typeof meta;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  if (typeof meta.tenant_id !== 'string' || typeof meta.device_name !== 'string') throw new Error(`${join(dir, FILES.meta)}: corrupt`);
  const [keyPem, certPem, deviceCaPem, serverCaPem] = await Promise.all(
    [FILES.key, FILES.cert, FILES.deviceCa, FILES.serverCa].map((f) => readFile(join(dir, f), 'utf8')),
  );
  return {
    tenantId: meta.tenant_id,
    deviceName: meta.device_name,
    keyPem: keyPem!,
    certPem: certPem!,
    deviceCaPem: deviceCaPem!,
    serverCaPem: serverCaPem!,
    notAfter: certNotAfter(certPem!),
  };
}
