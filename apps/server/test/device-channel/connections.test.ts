import 'reflect-metadata';
import { KeyObject, sign, webcrypto, X509Certificate } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import type { UploadReceiptResponse } from '@svc/device-proto';
import { nodeCryptoProvider, parseCertificateDer, parsePrivateKeyPem } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withConnectionKey } from '../../src/device-channel/connections.js';
import {
  enrollDevice,
  refusal,
  startRolloutFixture,
  unary,
  type ChannelFixture,
  type EnrolledDevice,
  type PublishedRelease,
} from '../fixtures/device-channel.js';
import { availableDrivers } from '../helpers/store.js';
import { signedReceipt } from '../fixtures/receipt-batches.js';

/**
 * The certificate of each live device connection is kept with the key its TLS handshake
 * decoded (device-channel/connections.ts): calls authenticate from it, and a receipt's device
 * signature is checked with that key. A signature by any other key must still fail.
 */
describe('withConnectionKey', () => {
  const message = Buffer.from('pae bytes');
  /** A self-signed certificate and its key: what a connection's handshake hands over. */
  const party = async (curve: 'P-256' | 'P-384' = 'P-256') => {
    const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: curve }, true, ['sign', 'verify']);
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: '01',
      name: 'CN=party',
      notBefore: new Date(),
      notAfter: new Date(Date.now() + 86_400_000),
      keys: keys as never,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    });
    const der = new Uint8Array(cert.rawData);
    return {
      connection: { der, publicKey: new X509Certificate(der).publicKey },
      // release-core reads P-256 keys only
      key: curve === 'P-256' ? parseCertificateDer(der).publicKey : undefined,
      privateKey: KeyObject.from(keys.privateKey),
    };
  };
  const sigBy = (p: { privateKey: KeyObject }, m: Uint8Array = message) => new Uint8Array(sign('sha256', m, { key: p.privateKey, dsaEncoding: 'der' }));
  let a: Awaited<ReturnType<typeof party>>;
  let b: Awaited<ReturnType<typeof party>>;
  beforeAll(async () => {
    a = await party();
    b = await party();
  });

  it("verifies with the connection's key only what that key signed", () => {
    const crypto = withConnectionKey(a.connection);
    expect(crypto.verifyP256(a.key!, message, sigBy(a))).toBe(true);
    expect(crypto.verifyP256(a.key!, message, sigBy(b))).toBe(false);
    expect(crypto.verifyP256(a.key!, Buffer.from('other bytes'), sigBy(a))).toBe(false);
    expect(crypto.verifyP256(a.key!, message, new Uint8Array([0x30, 0x02, 0x01]))).toBe(false);
  });
  it('any other key is verified as release-core does it, never with the connection key', async () => {
    const crypto = withConnectionKey(a.connection);
    expect(crypto.verifyP256(b.key!, message, sigBy(b))).toBe(true);
    expect(crypto.verifyP256(b.key!, message, sigBy(a))).toBe(false);
    // a P-384 connection key is never taken for a P-256 one
    const p384 = await party('P-384');
    expect(withConnectionKey(p384.connection).verifyP256(b.key!, message, sigBy(b))).toBe(true);
    expect(withConnectionKey(p384.connection).verifyP256(b.key!, message, sigBy(p384))).toBe(false);
    expect(crypto.sha256(message)).toEqual(nodeCryptoProvider.sha256(message));
  });
});

describe.each(availableDrivers())('connection certificates on %s', (driver) => {
  let f: ChannelFixture;
  let rel: PublishedRelease;
  let dev: EnrolledDevice;
  let other: EnrolledDevice;

  let dispose: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const r = await startRolloutFixture(driver, ['conn-1', 'conn-2'], { bytes: Buffer.from('conn\n'), placementPath: '/etc/edge/conn.conf' });
    ({ f, dispose } = r);
    rel = r.rel;
    [dev, other] = r.devs as [EnrolledDevice, EnrolledDevice];
  });
  afterAll(() => dispose?.());

  // the enrollments' anonymous connections close a moment after their clients do
  const settledSize = async (n: number) => {
    const deadline = Date.now() + 5000;
    while (f.ctx.connections.size !== n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return f.ctx.connections.size;
  };

  it('each connection is known while it lives and forgotten when it closes', async () => {
    await unary((cb) => dev.clients.device.ping({}, cb));
    await unary((cb) => other.clients.device.ping({}, cb));
    expect(await settledSize(2)).toBe(2);
    const third = await enrollDevice(f, 'conn-3');
    await unary((cb) => third.clients.device.ping({}, cb));
    expect(await settledSize(3)).toBe(3);
    third.clients.close();
    expect(await settledSize(2)).toBe(2);
  });

  it("a receipt embedding the connection's certificate but signed by another key is refused; the right one is accepted", async () => {
    // signed by the other device's key, but naming this device's key id: only the signature check can tell
    const env = JSON.parse(signedReceipt(f.tenantId, rel, { ...dev, key: other.key }).toString()) as { signatures: { keyid: string }[] };
    env.signatures[0]!.keyid = parsePrivateKeyPem(dev.key.keyPem).publicKey.keyid;
    const r = await refusal(unary((cb) => dev.clients.device.uploadReceipt({ envelope: Buffer.from(JSON.stringify(env)) }, cb)));
    expect(r.svcCode).toBe('SIGNATURE_INVALID');
    const ok = await unary<UploadReceiptResponse>((cb) => dev.clients.device.uploadReceipt({ envelope: signedReceipt(f.tenantId, rel, dev) }, cb));
    expect(ok.duplicate).toBe(false);
  });
});
