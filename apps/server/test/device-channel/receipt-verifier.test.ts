import 'reflect-metadata';
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReceiptVerifier, type VerifierInput } from '../../src/device-channel/receipt-verifier.js';
import { startRolloutFixture, type ChannelFixture, type EnrolledDevice, type PublishedRelease } from '../fixtures/device-channel.js';
import { signedReceipt } from '../fixtures/receipt-batches.js';

/**
 * Receipts are verified in worker threads (device-channel/receipt-verifier.ts); a receipt must
 * get the same answer there as inline on the event loop, a refusal the same typed error, and a
 * thread that dies must fail only the receipts it held.
 */
describe('receipt verification threads', () => {
  let f: ChannelFixture;
  let rel: PublishedRelease;
  let dev: EnrolledDevice;
  let other: EnrolledDevice;
  let caDers: Uint8Array[];
  const log = { errors: [] as string[], error: (_o: object, msg: string) => void log.errors.push(msg) };
  const threads = new ReceiptVerifier(2, log);
  const inline = new ReceiptVerifier(0, log);

  let dispose: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const r = await startRolloutFixture('pglite', ['verify-1', 'verify-2'], { bytes: Buffer.from('verify\n'), placementPath: '/etc/edge/verify.conf' });
    ({ f, dispose } = r);
    rel = r.rel;
    [dev, other] = r.devs as [EnrolledDevice, EnrolledDevice];
    caDers = await f.ctx.cas.certificatesDer(f.tenantId, new Date());
  });
  afterAll(async () => {
    await Promise.all([threads.close(), inline.close()]);
    await dispose?.();
  });

  const input = (d: EnrolledDevice, envelopeBytes: Uint8Array, over: Partial<VerifierInput> = {}): VerifierInput => ({
    envelopeBytes,
    caDers,
    tenant: f.tenantId,
    deviceName: d.name,
    now: new Date(),
    connectionCertificateDer: d.certDer,
    connectionCertificateVerified: true,
    publicKey: new X509Certificate(Buffer.from(d.certDer)).publicKey,
    ...over,
  });
  const outcome = (p: Promise<unknown>) =>
    p.then(
      (v) => ({ ok: v }),
      (e: { name: string; code?: string; message: string }) => ({ name: e.name, code: e.code, message: e.message }),
    );

  it('answers every receipt as the event loop would: the result, or the same typed refusal', async () => {
    expect(threads.size).toBe(2);
    expect(inline.size).toBe(0);
    // the threads start with the first receipt, not with the server
    expect(threads.started).toBe(0);
    const cases: VerifierInput[] = [
      input(dev, signedReceipt(f.tenantId, rel, dev)),
      input(other, signedReceipt(f.tenantId, rel, other)),
      // over the other device's connection: the embedded certificate is not the connection's
      input(other, signedReceipt(f.tenantId, rel, dev)),
      // the connection's key, a receipt signed with another key
      input(dev, signedReceipt(f.tenantId, rel, { ...dev, key: other.key })),
      input(dev, Buffer.from('not a receipt')),
      input(dev, signedReceipt(f.tenantId, rel, dev, { tenant: '00000000-0000-4000-8000-000000000000' })),
      input(dev, signedReceipt(f.tenantId, rel, dev), { now: new Date('2100-01-01T00:00:00Z') }),
      // without the handshake's key: release-core imports the certificate's key itself
      input(dev, signedReceipt(f.tenantId, rel, dev), { publicKey: undefined }),
    ];
    const there = await Promise.all(cases.map((c) => outcome(threads.verify(c))));
    expect(threads.started).toBe(2);
    const here = await Promise.all(cases.map((c) => outcome(inline.verify(c))));
    expect(there).toEqual(here);
    expect(there.map((o) => ('ok' in o ? 'ok' : o.code))).toEqual([
      'ok',
      'ok',
      'CERT_IDENTITY_MISMATCH',
      'KEY_UNTRUSTED',
      'ENVELOPE_MALFORMED',
      'TENANT_MISMATCH',
      'CERT_EXPIRED',
      'ok',
    ]);
    expect(there.filter((o) => 'name' in o).every((o) => 'name' in o && o.name === 'ReleaseError')).toBe(true);
  });

  it('a thread that dies fails the receipts it held, and is replaced', async () => {
    const victim = (threads as unknown as { threads: { worker: { terminate(): Promise<number> } }[] }).threads[0]!;
    const receipt = input(dev, signedReceipt(f.tenantId, rel, dev));
    const held = Array.from({ length: 400 }, () => outcome(threads.verify(receipt)));
    await victim.worker.terminate();
    const results = await Promise.all(held);
    // the dead thread's receipts fail; the other thread's are verified
    const stopped = results.filter((r) => 'message' in r && /thread stopped/.test(r.message));
    expect(stopped.length).toBeGreaterThan(0);
    expect(results.filter((r) => 'ok' in r).length + stopped.length).toBe(400);
    expect(log.errors).toContain('receipt verification thread stopped; starting another');
    expect(threads.size).toBe(2);
    const again = await Promise.all([0, 1, 2, 3].map(() => outcome(threads.verify(input(dev, signedReceipt(f.tenantId, rel, dev))))));
    expect(again.every((r) => 'ok' in r)).toBe(true);
  });
});
