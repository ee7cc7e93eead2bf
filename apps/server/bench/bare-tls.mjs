// TLS material for the benches' bare Node servers (tls-floor.mjs, handshake.mjs), made as the
// device port makes its own (src/device-channel/server-tls.ts): a P-256 server CA and a leaf
// for the device-channel name, plus a client CA and one P-256 client certificate. Nothing is
// stored: only the real server keeps its CA key, wrapped, in its database.
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { encodePem } from '@svc/release-core';
import { createCa, issueCertificate, loadCa, P256_KEY } from '../dist/device-channel/pki.js';
import { DEVICE_CHANNEL_TLS_NAME } from '../dist/device-channel/server-tls.js';

async function leaf(ca, subjectCN, usage, now, dnsNames, ips) {
  const keys = await webcrypto.subtle.generateKey(P256_KEY, true, ['sign', 'verify']);
  const der = await issueCertificate(await loadCa(ca.certDer, ca.keyPem), {
    subjectCN,
    publicKey: await x509.PublicKey.create(keys.publicKey),
    usage,
    dnsNames,
    ips,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + 86_400_000),
  });
  return {
    certPem: encodePem(der, 'CERTIFICATE'),
    keyPem: encodePem(new Uint8Array(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)), 'PRIVATE KEY'),
  };
}

/** PEMs: `serverCa`, `server` {certPem, keyPem}, `clientCa`, `client` {certPem, keyPem}. */
export async function bareTlsMaterial(now = new Date()) {
  const serverCa = await createCa('bench server CA', now, 1);
  const clientCa = await createCa('bench client CA', now, 1);
  return {
    serverCa: encodePem(serverCa.certDer, 'CERTIFICATE'),
    server: await leaf(serverCa, DEVICE_CHANNEL_TLS_NAME, 'serverAuth', now, [DEVICE_CHANNEL_TLS_NAME, 'localhost'], ['127.0.0.1']),
    clientCa: encodePem(clientCa.certDer, 'CERTIFICATE'),
    client: await leaf(clientCa, 'bench-client', 'clientAuth', now, [], []),
  };
}
