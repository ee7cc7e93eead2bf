import { X509Certificate } from 'node:crypto';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, Metadata, Server, ServerCredentials, status, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import { DeviceServiceService, LegacyStatus, type ReportLegacyStatusRequest, type UploadReceiptRequest } from '@svc/device-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChannelClients } from '../src/channel/client.js';
import { buildCsr } from '../src/channel/csr.js';
import { generateIdentityKey, importIdentityKey, loadIdentity, saveIdentity } from '../src/channel/identity.js';
import { uploadOutbox } from '../src/channel/outbox-uploader.js';
import { parseSimArgs } from '../src/sim/args.js';
import { simFailure } from '../src/sim/main.js';
import { Outbox } from '../src/transaction/outbox.js';
import { x509 } from '@svc/release-core/x509';

/** A real gRPC DeviceService on loopback whose answers the test scripts call by call. */
function scriptedServer(script: (req: UploadReceiptRequest) => { code: number; details?: string; svcCode?: string } | null) {
  const received: Buffer[] = [];
  const legacy: ReportLegacyStatusRequest[] = [];
  const server = new Server();
  const fail = (cb: sendUnaryData<never>, f: { code: number; details?: string; svcCode?: string }) => {
    const md = new Metadata();
    if (f.svcCode) md.set('svc-error-code', f.svcCode);
    cb({ code: f.code, details: f.details ?? 'x', metadata: md, name: 'e', message: 'e' });
  };
  server.addService(DeviceServiceService, {
    uploadReceipt: (call: ServerUnaryCall<UploadReceiptRequest, unknown>, cb: sendUnaryData<unknown>) => {
      received.push(call.request.envelope);
      const f = script(call.request);
      if (f) fail(cb, f);
      else cb(null, { receiptId: 'r1', duplicate: false });
    },
    reportLegacyStatus: (call: ServerUnaryCall<ReportLegacyStatusRequest, unknown>, cb: sendUnaryData<unknown>) => {
      legacy.push(call.request);
      cb(null, {});
    },
    checkIn: () => undefined,
    renewCertificate: () => undefined,
    uploadLogBundle: () => undefined,
    ping: () => undefined,
  });
  return { server, received, legacy };
}

describe('receipt outbox uploader over a real gRPC connection', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-outbox-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps the file on a transient failure, deletes it only after the server acknowledged, from the exact bytes', async () => {
    let calls = 0;
    const s = scriptedServer(() => (++calls === 1 ? { code: status.UNAVAILABLE } : null));
    const port = await new Promise<number>((res, rej) =>
      s.server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))),
    );
    const clients = new ChannelClients(`127.0.0.1:${port}`, credentials.createInsecure());
    const outbox = new Outbox(join(dir, 'a'));
    const bytes = new TextEncoder().encode('{"payloadType":"svc.release-receipt.v1","payload":"e30=","signatures":[]}');
    await outbox.put('tx-1', 'receipt', bytes);
    const acked: string[] = [];
    const deps = {
      clients,
      outbox,
      acknowledged: async (tx: string) => {
        acked.push(tx);
        await outbox.remove(tx, 'receipt');
      },
    };
    try {
      const first = await uploadOutbox(deps);
      expect(first).toEqual({ uploaded: [], refused: [], pending: ['tx-1'] });
      expect(await readdir(join(dir, 'a'))).toEqual(['tx-1.receipt.json']);
      const second = await uploadOutbox(deps);
      expect(second.uploaded).toEqual(['tx-1']);
      expect(acked).toEqual(['tx-1']);
      expect(await readdir(join(dir, 'a'))).toEqual([]);
      // both attempts carried exactly the persisted bytes
      expect(s.received.map((b) => Buffer.from(b).toString())).toEqual([Buffer.from(bytes).toString(), Buffer.from(bytes).toString()]);
    } finally {
      clients.close();
      s.server.forceShutdown();
    }
  });

  it('a refusal moves the file aside (never retried, kept as evidence); legacy status maps to the enum', async () => {
    const s = scriptedServer(() => ({ code: status.FAILED_PRECONDITION, details: 'receipt mismatch', svcCode: 'RECEIPT_MISMATCH' }));
    const port = await new Promise<number>((res, rej) =>
      s.server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))),
    );
    const clients = new ChannelClients(`127.0.0.1:${port}`, credentials.createInsecure());
    const outbox = new Outbox(join(dir, 'b'));
    await outbox.put('tx-2', 'receipt', new TextEncoder().encode('{}'));
    await outbox.putDelivery('tx-2', new TextEncoder().encode('{"members":[]}'));
    await outbox.put('legacy:r9', 'legacy-status', new TextEncoder().encode(JSON.stringify({ rollout: 'r9', status: 'rolled-back', error: 'health failed' })));
    const acked: string[] = [];
    try {
      const r = await uploadOutbox({ clients, outbox, acknowledged: async (tx) => void acked.push(tx) });
      expect(r.refused).toEqual(['tx-2']);
      expect(r.uploaded).toEqual(['legacy:r9']);
      expect(acked).toEqual(['legacy:r9']);
      // the receipt and the delivery report beside it are moved aside together; the listing sees neither again
      expect((await readdir(join(dir, 'b'))).filter((f) => f.startsWith('tx-2')).sort()).toEqual(['tx-2.delivery.json.refused', 'tx-2.receipt.json.refused']);
      expect((await outbox.list()).map((e) => e.id)).toEqual(['legacy:r9']);
      expect(s.legacy).toEqual([{ rolloutId: 'r9', status: LegacyStatus.LEGACY_STATUS_FAILED, detail: 'rolled-back: health failed' }]);
    } finally {
      clients.close();
      s.server.forceShutdown();
    }
  });
});

describe('device identity on disk', () => {
  it('P-256 key 0600, CSR with CN = device name signed by that key, round trip', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-id-'));
    try {
      const { keyPem, keys } = await generateIdentityKey();
      const csr = new x509.Pkcs10CertificateRequest(await buildCsr(keys, 'dev-7'));
      expect(csr.subjectName.getField('CN')).toEqual(['dev-7']);
      expect(await csr.verify()).toBe(true);
      expect((csr.publicKey.algorithm as { namedCurve?: string }).namedCurve).toBe('P-256');
      // re-imported key makes a CSR for the same public key (renewal)
      const again = new x509.Pkcs10CertificateRequest(await buildCsr(await importIdentityKey(keyPem), 'dev-7'));
      expect(Buffer.from(again.publicKey.rawData).equals(Buffer.from(csr.publicKey.rawData))).toBe(true);
      const self = await x509.X509CertificateGenerator.createSelfSigned({
        name: 'CN=dev-7',
        keys: keys as never,
        signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      });
      const pem = self.toString('pem');
      expect(await loadIdentity(dir)).toBeUndefined();
      await saveIdentity(dir, { tenantId: 't', deviceName: 'dev-7', keyPem, certPem: pem, deviceCaPem: pem, serverCaPem: pem, notAfter: new Date() });
      expect((await stat(join(dir, 'identity', 'device.key'))).mode & 0o777).toBe(0o600);
      const back = await loadIdentity(dir);
      expect(back?.keyPem).toBe(keyPem);
      expect(back?.notAfter.getTime()).toBe(new Date(new X509Certificate(pem).validTo).getTime());
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('simulator flags', () => {
  it('parses and refuses bad values naming the flag', () => {
    expect(parseSimArgs(['--devices', '5', '--token', 'svce_x'], {})).toMatchObject({ devices: 5, token: 'svce_x', server: '127.0.0.1:8443', intervalS: 60 });
    expect(() => parseSimArgs(['--devices', '5'], {})).toThrow(/^--token: required/);
    expect(() => parseSimArgs(['--devices', '0', '--token', 't'], {})).toThrow(/^--devices: must be an integer 1\.\.100000/);
    expect(() => parseSimArgs(['--server', 'nope', '--token', 't'], {})).toThrow(/^--server: must be host:port/);
    expect(() => parseSimArgs(['--bogus', '--token', 't'], {})).toThrow();
    expect(parseSimArgs(['--token', 't'], {}).maxInFlight).toBe(64);
    expect(parseSimArgs(['--token', 't', '--max-in-flight', '8'], {}).maxInFlight).toBe(8);
    expect(() => parseSimArgs(['--max-in-flight', '0', '--token', 't'], {})).toThrow(/^--max-in-flight: must be an integer 1\.\.100000/);
    expect(parseSimArgs(['--token', 't'], {}).maxErrors).toBe(0);
    expect(parseSimArgs(['--token', 't', '--max-errors', '50'], {}).maxErrors).toBe(50);
    expect(() => parseSimArgs(['--max-errors', '1.5', '--token', 't'], {})).toThrow(/^--max-errors: must be an integer 0\.\./);
    expect(parseSimArgs(['--token', 't'], {})).toMatchObject({ connection: 'persistent', idleCloseS: 30 });
    expect(parseSimArgs(['--token', 't', '--connection', 'per-check-in', '--idle-close', '5'], {})).toMatchObject({
      connection: 'per-check-in',
      idleCloseS: 5,
    });
    expect(() => parseSimArgs(['--token', 't', '--connection', 'sometimes'], {})).toThrow(/^--connection: must be persistent or per-check-in/);
    expect(() => parseSimArgs(['--token', 't', '--idle-close', '0'], {})).toThrow(/^--idle-close: must be an integer 1\.\.3600/);
  });

  it('fails the run when fewer devices enrolled than asked for, or more calls failed than --max-errors', () => {
    const args = parseSimArgs(['--token', 't', '--devices', '3', '--max-errors', '2'], {});
    const run = { connects: 3, pings: 0, checkIns: 9, receipts: 0, duplicates: 0, errors: 0, skipped: 0, enrolled: 3 };
    expect(simFailure(args, run)).toBeUndefined();
    expect(simFailure(args, { ...run, errors: 2, lastError: 'x' })).toBeUndefined();
    expect(simFailure(args, { ...run, errors: 3, lastError: 'sim-000001: 14 UNAVAILABLE' })).toBe(
      '3 errors (--max-errors 2; last error: sim-000001: 14 UNAVAILABLE)',
    );
    // an enrollment failure is never tolerated
    expect(simFailure(args, { ...run, enrolled: 2, errors: 1, lastError: 'enroll sim-000002: 16 UNAUTHENTICATED' })).toBe(
      'enrolled 2 of 3 devices (last error: enroll sim-000002: 16 UNAUTHENTICATED)',
    );
    expect(simFailure(args, { ...run, enrolled: 0 })).toBe('enrolled 0 of 3 devices (stopped before every enrollment was attempted)');
  });
});
