import { X509Certificate } from 'node:crypto';
import { createSecureServer, type Http2SecureServer, type ServerHttp2Stream } from 'node:http2';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { status } from '@grpc/grpc-js';
import { DeviceServiceService, ReportLegacyStatusRequest, RepositoryServiceService, type CheckInResponse, type GetFileResponse } from '@svc/device-proto';
import { makeCa, makeDeviceCert, makeServerCert, tempDir, type CertFiles } from '@svc/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEVICE_CHANNEL_TLS_NAME } from '../src/channel/client.js';
import { ServerPin, WireCallError, WireConnection } from '../src/sim/wire.js';

/*
 * The simulator's gRPC-over-HTTP/2 client against a node:http2 server that answers as grpc-js
 * does (length-prefixed messages, grpc-status in trailers, or Trailers-Only for an error); the
 * same client against the real device port runs in apps/e2e/test/fleet-simulator.test.ts.
 */

interface Seen {
  path: string;
  headers: Record<string, unknown>;
  peerCn: string | undefined;
}

function frame(msg: Buffer): Buffer {
  const f = Buffer.alloc(5 + msg.length);
  f.writeUInt32BE(msg.length, 1);
  msg.copy(f, 5);
  return f;
}

const checkInAnswer: CheckInResponse = {
  assignments: [],
  logRequests: [],
  renewCertificate: false,
  certificateNotAfter: undefined,
  checkInIntervalS: 42,
  serverTime: undefined,
};

/** How the test server answers each path. */
function answer(stream: ServerHttp2Stream, path: string): void {
  if (path === DeviceServiceService.checkIn.path) {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(frame(DeviceServiceService.checkIn.responseSerialize(checkInAnswer)));
  } else if (path === RepositoryServiceService.getFile.path) {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    const parts = ['hello ', 'wire'].map((s) =>
      frame(RepositoryServiceService.getFile.responseSerialize({ data: Buffer.from(s), totalLength: 10 } satisfies GetFileResponse)),
    );
    stream.end(Buffer.concat(parts));
  } else if (path === DeviceServiceService.uploadReceipt.path) {
    // an error after the headers: the status in the trailers
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () =>
      stream.sendTrailers({
        'grpc-status': String(status.FAILED_PRECONDITION),
        'grpc-message': encodeURIComponent('receipt: wrong key é'),
        'svc-error-code': 'RECEIPT_KEY',
      }),
    );
    stream.end();
  } else if (path === DeviceServiceService.renewCertificate.path) {
    // a unary method answered with two messages
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(Buffer.concat([frame(Buffer.alloc(0)), frame(Buffer.alloc(0))]));
  } else if (path === DeviceServiceService.reportLegacyStatus.path) {
    // a body that ends inside its message (the prefix promises 10 bytes, 3 come)
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(frame(Buffer.alloc(10)).subarray(0, 8));
  } else if (path === DeviceServiceService.ping.path) {
    // Trailers-Only: the status in the only HEADERS frame
    stream.respond(
      { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(status.UNAUTHENTICATED), 'grpc-message': 'who%20are%20you' },
      { endStream: true },
    );
  } else {
    // never answers (the deadline test)
  }
}

async function serve(cert: CertFiles, ca: CertFiles): Promise<{ server: Http2SecureServer; address: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createSecureServer({ key: cert.keyPem, cert: cert.certPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true, allowHTTP1: false });
  server.on('stream', (stream, headers) => {
    const path = String(headers[':path']);
    const socket = stream.session?.socket as unknown as { getPeerCertificate(): { subject?: { CN?: string } } };
    seen.push({ path, headers: { ...headers }, peerCn: socket.getPeerCertificate().subject?.CN });
    stream.on('data', () => undefined);
    stream.on('end', () => answer(stream, path));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, address: `127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe('the simulator wire client (gRPC over node:http2, pinned server CA)', () => {
  let cleanup: () => Promise<void>;
  let serverCa: CertFiles;
  let deviceCa: CertFiles;
  let device: CertFiles;
  let goodCert: CertFiles;
  let good: Awaited<ReturnType<typeof serve>>;
  let strangers: Awaited<ReturnType<typeof serve>>;
  let misnamed: Awaited<ReturnType<typeof serve>>;

  beforeAll(async () => {
    const t = await tempDir('sim-wire');
    cleanup = t.cleanup;
    serverCa = makeCa(t.dir, 'server-ca');
    const otherCa = makeCa(t.dir, 'other-ca');
    deviceCa = makeCa(t.dir, 'device-ca');
    device = makeDeviceCert(t.dir, deviceCa, '00000000-0000-4000-8000-000000000001', 'wire-dev-1');
    goodCert = makeServerCert(t.dir, 'good', serverCa, [`DNS:${DEVICE_CHANNEL_TLS_NAME}`]);
    good = await serve(goodCert, deviceCa);
    strangers = await serve(makeServerCert(t.dir, 'stranger', otherCa, [`DNS:${DEVICE_CHANNEL_TLS_NAME}`]), deviceCa);
    misnamed = await serve(makeServerCert(t.dir, 'misnamed', serverCa, ['DNS:elsewhere.example']), deviceCa);
  });
  afterAll(async () => {
    for (const s of [good, strangers, misnamed]) await new Promise((r) => s?.server.close(r));
    await cleanup?.();
  });

  const connect = (address: string, onEnd?: () => void) =>
    new WireConnection({ address, keyPem: device.keyPem, certPem: device.certPem, pin: new ServerPin(serverCa.certPem, DEVICE_CHANNEL_TLS_NAME), onEnd });

  it('makes unary and server-streaming calls with the device certificate, as gRPC frames them', async () => {
    const c = connect(good.address);
    const res = await c.unary(DeviceServiceService.checkIn, { inventory: undefined });
    expect(res.checkInIntervalS).toBe(42);
    const chunks = await c.serverStream(RepositoryServiceService.getFile, { path: 'targets/x', offset: 0, length: 0 });
    expect(Buffer.concat(chunks.map((m) => m.data)).toString()).toBe('hello wire');
    expect(c.usable).toBe(true);
    c.close();
    expect(c.usable).toBe(false);
    const mine = good.seen.slice(-2);
    expect(mine.map((s) => s.path)).toEqual([DeviceServiceService.checkIn.path, RepositoryServiceService.getFile.path]);
    expect(mine[0]!.peerCn).toBe('wire-dev-1');
    expect(mine[0]!.headers).toMatchObject({ ':method': 'POST', 'content-type': 'application/grpc', te: 'trailers', ':authority': DEVICE_CHANNEL_TLS_NAME });
  });

  it('turns a status in the trailers into a WireCallError with the code, decoded message and svc-error-code', async () => {
    const c = connect(good.address);
    const e = await c.unary(DeviceServiceService.uploadReceipt, { envelope: Buffer.from('{}') }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(WireCallError);
    expect(e).toMatchObject({ code: status.FAILED_PRECONDITION, details: 'receipt: wrong key é', errorCode: 'RECEIPT_KEY' });
    expect((e as Error).message).toBe('9 FAILED_PRECONDITION: receipt: wrong key é');
    // Trailers-Only
    await expect(c.unary(DeviceServiceService.ping, {})).rejects.toMatchObject({ code: status.UNAUTHENTICATED, details: 'who are you' });
    c.close();
  });

  it('refuses an answer that is not one whole message with INTERNAL', async () => {
    const c = connect(good.address);
    await expect(c.unary(DeviceServiceService.renewCertificate, { csrDer: Buffer.alloc(0) })).rejects.toMatchObject({
      code: status.INTERNAL,
      details: `${DeviceServiceService.renewCertificate.path}: 2 response messages for a unary call`,
    });
    await expect(c.unary(DeviceServiceService.reportLegacyStatus, ReportLegacyStatusRequest.fromPartial({}))).rejects.toMatchObject({
      code: status.INTERNAL,
      details: 'response ends inside a message',
    });
    c.close();
  });

  it('refuses a server certificate outside its validity, once it has expired even if it was checked before', () => {
    const pin = new ServerPin(serverCa.certPem, DEVICE_CHANNEL_TLS_NAME);
    const leaf = new X509Certificate(goodCert.certPem);
    pin.check(leaf); // valid now: remembered by fingerprint
    expect(() => pin.check(leaf, Date.parse(leaf.validTo) + 1000)).toThrow(/server certificate outside its validity/);
    expect(() => pin.check(leaf, Date.parse(leaf.validFrom) - 1000)).toThrow(/server certificate outside its validity/);
  });

  it('gives up at the deadline with DEADLINE_EXCEEDED', async () => {
    const c = connect(good.address);
    const slow = { ...DeviceServiceService.ping, path: '/svc.device.v1.DeviceService/NeverAnswers' };
    await expect(c.unary(slow, {}, 300)).rejects.toMatchObject({ code: status.DEADLINE_EXCEEDED });
    c.close();
  });

  it('gives up a connection whose handshake never completes at the deadline, telling its owner once', async () => {
    // accepts TCP and never answers the ClientHello: what a client sees when the server's
    // accept queue dropped its connection
    const silent = createServer(() => undefined);
    const sockets: Socket[] = [];
    silent.on('connection', (s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      let ended = 0;
      const c = connect(`127.0.0.1:${(silent.address() as AddressInfo).port}`, () => (ended += 1));
      await expect(c.unary(DeviceServiceService.checkIn, { inventory: undefined }, 300)).rejects.toMatchObject({
        code: status.DEADLINE_EXCEEDED,
        details: `${DeviceServiceService.checkIn.path}: no connection within 300 ms`,
      });
      await expect(c.unary(DeviceServiceService.ping, {})).rejects.toMatchObject({ code: status.UNAVAILABLE });
      expect(ended).toBe(1);
      expect(c.usable).toBe(false);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  it('sends nothing to a server whose certificate another CA issued, or that is not named for the device port', async () => {
    for (const [s, why] of [
      [strangers, 'is not issued by the pinned server CA'],
      [misnamed, `is not valid for ${DEVICE_CHANNEL_TLS_NAME}`],
    ] as const) {
      let ended = 0;
      const c = connect(s.address, () => (ended += 1));
      const e = await c.unary(DeviceServiceService.checkIn, { inventory: undefined }).catch((x: unknown) => x);
      expect(e).toMatchObject({ code: status.UNAVAILABLE });
      expect((e as Error).message).toContain(why);
      expect(s.seen).toEqual([]);
      expect(ended).toBe(1);
      expect(c.usable).toBe(false);
    }
  });

  it('fails with UNAVAILABLE when nothing listens, and tells its owner once', async () => {
    const probe = await serve(makeServerCert((await tempDir('sim-wire-gone')).dir, 'gone', serverCa, [`DNS:${DEVICE_CHANNEL_TLS_NAME}`]), deviceCa);
    const address = probe.address;
    await new Promise((r) => probe.server.close(r));
    let ended = 0;
    const c = connect(address, () => (ended += 1));
    await expect(c.unary(DeviceServiceService.checkIn, { inventory: undefined })).rejects.toMatchObject({ code: status.UNAVAILABLE });
    c.close();
    expect(ended).toBe(1);
  });
});
