import 'reflect-metadata';
import { Client, Metadata, status, type ChannelCredentials, type ServiceError } from '@grpc/grpc-js';
import * as x509 from '@peculiar/x509';
import { DeviceServiceService, EnrollmentServiceService, LegacyStatus, RepositoryServiceService } from '@svc/device-proto';
import fc from 'fast-check';
import { connect } from 'node:http2';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePem } from '@svc/release-core';
import { issueCertificate } from '../../src/device-channel/pki.js';
import { DEVICE_CHANNEL_TLS_NAME } from '../../src/device-channel/server-tls.js';
import { availableDrivers } from '../helpers/store.js';
import {
  CHANNEL_OPTIONS,
  channelCredentials,
  clientsFor,
  csrFor,
  enrollDevice,
  newDeviceKey,
  refusal,
  startChannelFixture,
  unary,
  type ChannelFixture,
  type EnrolledDevice,
} from '../fixtures/device-channel.js';

/**
 * Hostile input on the device channel (real gRPC server, mTLS on loopback): bytes that are
 * no protobuf message, random bytes, NUL and other control characters in string fields,
 * messages over the 1 MiB limit, wrong certificates. Every call ends with a gRPC status
 * (never INTERNAL or UNKNOWN, which would mean an unhandled failure), and the server keeps
 * answering.
 */
interface Method {
  path: string;
  requestStream: boolean;
  responseStream: boolean;
}

const METHODS: Method[] = [EnrollmentServiceService, DeviceServiceService, RepositoryServiceService].flatMap((service) => Object.values(service) as Method[]);
const identity = (b: Buffer) => b;

interface Outcome {
  code: number;
  details: string;
  svcCode: string | undefined;
}

/** One call with the request bytes exactly as given (unary, server or client streaming). */
function rawCall(client: Client, m: Method, messages: Buffer[]): Promise<Outcome> {
  return new Promise((resolve) => {
    const done = (err: ServiceError | null) =>
      resolve(
        err === null
          ? { code: status.OK, details: '', svcCode: undefined }
          : { code: err.code, details: err.details, svcCode: err.metadata?.get('svc-error-code')[0]?.toString() },
      );
    if (m.requestStream) {
      const call = client.makeClientStreamRequest(m.path, identity, identity, new Metadata(), (err) => done(err));
      for (const msg of messages) call.write(msg);
      call.end();
    } else if (m.responseStream) {
      const call = client.makeServerStreamRequest(m.path, identity, identity, messages[0]!, new Metadata());
      call.on('data', () => undefined);
      call.on('error', (err: ServiceError) => done(err));
      call.on('end', () => done(null));
    } else {
      client.makeUnaryRequest(m.path, identity, identity, messages[0]!, (err) => done(err));
    }
  });
}

/** Not one of these: the status of an unhandled failure. */
const UNHANDLED = new Set<number>([status.INTERNAL, status.UNKNOWN]);

/** Protobuf bytes no decoder accepts: a wire type 7, a length past the end, a cut varint, a huge length. */
const MALFORMED = [Buffer.from([0x0f]), Buffer.from([0x0a, 0x05, 0x61]), Buffer.from([0x08, 0xff]), Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f])];

describe.each(availableDrivers())('hostile device-channel input on %s', (driver) => {
  let f: ChannelFixture;
  let device: EnrolledDevice;
  let mtls: Client;
  let anon: Client;
  let anonClients: ReturnType<typeof clientsFor>;
  const clientFor = (m: Method) => (m.path.includes('EnrollmentService') ? anon : mtls);

  beforeAll(async () => {
    f = await startChannelFixture(driver);
    device = await enrollDevice(f, 'dev-hostile');
    mtls = new Client(f.addr, channelCredentials(f.serverCaPem, { keyPem: device.key.keyPem, certPem: device.certPem }), CHANNEL_OPTIONS);
    anon = new Client(f.addr, channelCredentials(f.serverCaPem), CHANNEL_OPTIONS);
    anonClients = clientsFor(f.addr, channelCredentials(f.serverCaPem));
  });
  afterAll(async () => {
    mtls?.close();
    anon?.close();
    anonClients?.close();
    device?.clients.close();
    await f?.dispose();
  });

  it('bytes that are no protobuf message are INVALID_ARGUMENT on every method, before any handler', async () => {
    for (const m of METHODS) {
      for (const bytes of MALFORMED) {
        const r = await rawCall(clientFor(m), m, [bytes]);
        expect({ path: m.path, bytes: bytes.toString('hex'), code: r.code, svcCode: r.svcCode }).toEqual({
          path: m.path,
          bytes: bytes.toString('hex'),
          code: status.INVALID_ARGUMENT,
          svcCode: 'INVALID_INPUT',
        });
        expect(r.details).toMatch(/^request: not a valid \w+ request message \(/);
      }
    }
    // a client stream whose second message is malformed: refused, the handler never sees it
    const upload = METHODS.find((m) => m.requestStream)!;
    const r = await rawCall(mtls, upload, [Buffer.from([0x0a, 0x00]), MALFORMED[0]!]);
    expect(r.code).toBe(status.INVALID_ARGUMENT);
  });

  it('random bytes (seeded) on every method end in a status, never an unhandled failure', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...METHODS), fc.array(fc.uint8Array({ maxLength: 300 }), { minLength: 1, maxLength: 3 }), async (m, messages) => {
        const r = await rawCall(
          clientFor(m),
          m,
          messages.map((b) => Buffer.from(b)),
        );
        if (UNHANDLED.has(r.code)) throw new Error(`${m.path} answered ${status[r.code]}: ${r.details}`);
      }),
      { seed: 20_251_122, numRuns: 150 },
    );
  });

  // (protobuf strings are UTF-8 on the wire: a lone surrogate arrives as U+FFFD, there is none to refuse)
  it('NUL, ESC, DEL and C1 controls in string fields are INVALID_ARGUMENT naming the field', async () => {
    const c = device.clients;
    const key = await newDeviceKey();
    const enroll = (over: object) =>
      refusal(
        unary(async (cb) =>
          anonClients.enrollment.enroll({ token: 'svce_x', deviceName: 'dev-n', csrDer: await csrFor(key, 'dev-n'), inventory: undefined, ...over }, cb),
        ),
      );
    const cases: [string, Promise<{ code: number; details: string; svcCode: string | undefined }>][] = [
      ['token', enroll({ token: 'svce_\u0000' })],
      ['device_name', enroll({ deviceName: 'dev\u001b[2J' })],
      ['inventory.product', enroll({ inventory: { agentVersion: '1', profile: 'p', product: 'edge\u007f', slots: [], attributes: undefined } })],
      [
        'inventory.profile',
        refusal(
          unary((cb) => c.device.checkIn({ inventory: { agentVersion: '1', profile: 'linux\u0000', product: 'edge', slots: [], attributes: undefined } }, cb)),
        ),
      ],
      [
        'inventory.slots.0.name',
        refusal(
          unary((cb) =>
            c.device.checkIn(
              {
                inventory: {
                  agentVersion: '1',
                  profile: 'p',
                  product: 'edge',
                  slots: [{ name: 'a\u0000', state: 'booted', bundleVersion: '1', booted: true }],
                  attributes: undefined,
                },
              },
              cb,
            ),
          ),
        ),
      ],
      [
        'rollout_id',
        refusal(unary((cb) => c.device.reportLegacyStatus({ rolloutId: 'r\u0000', status: LegacyStatus.LEGACY_STATUS_INSTALLED, detail: '' }, cb))),
      ],
      [
        'detail',
        refusal(unary((cb) => c.device.reportLegacyStatus({ rolloutId: 'r', status: LegacyStatus.LEGACY_STATUS_FAILED, detail: 'csi \u009b31m' }, cb))),
      ],
      [
        'path',
        refusal(
          new Promise((resolve, reject) => {
            const s = c.repository.getFile({ path: 'metadata/\u0000root.json', offset: 0, length: 0 });
            s.on('data', () => undefined);
            s.on('error', reject);
            s.on('end', resolve);
          }),
        ),
      ],
      [
        'header.content_type',
        refusal(
          new Promise((resolve, reject) => {
            const s = c.device.uploadLogBundle((err, res) => (err ? reject(err) : resolve(res)));
            s.write({ header: { logRequestId: '00000000-0000-4000-8000-000000000000', contentType: 'text/plain\u0000' } });
            s.end();
          }),
        ),
      ],
    ];
    for (const [field, pending] of cases) {
      const r = await pending;
      expect({ field, code: r.code, svcCode: r.svcCode }).toEqual({ field, code: status.INVALID_ARGUMENT, svcCode: 'INVALID_INPUT' });
      expect(r.details.startsWith(`${field}: `), `${field}: ${r.details}`).toBe(true);
    }
    // nothing reached the database: the device row keeps its profile
    const row = await f.t.store.db.selectFrom('devices').select(['profile']).where('name', '=', 'dev-hostile').executeTakeFirstOrThrow();
    expect(row.profile).toBe('linux-arm64');
  });

  it('framing headers grpc-js alone would answer INTERNAL to end in a status naming them: corrupt gzip, unknown encoding, bad grpc-timeout', async () => {
    const ping = '/svc.device.v1.DeviceService/Ping';
    const cases: { headers: Record<string, string>; frame: Buffer; code: number; details: RegExp }[] = [
      // the compressed flag set and bytes that are no gzip stream
      {
        headers: { 'grpc-encoding': 'gzip' },
        frame: grpcFrame(Buffer.from('not gzip at all'), true),
        code: status.INVALID_ARGUMENT,
        details: /^grpc-encoding: /,
      },
      { headers: { 'grpc-encoding': 'deflate' }, frame: grpcFrame(Buffer.from([0x00]), true), code: status.INVALID_ARGUMENT, details: /^grpc-encoding: / },
      { headers: { 'grpc-encoding': 'br' }, frame: grpcFrame(Buffer.alloc(0), true), code: status.INVALID_ARGUMENT, details: /^grpc-encoding: / },
      { headers: { 'grpc-timeout': 'soon' }, frame: grpcFrame(Buffer.alloc(0), false), code: status.INVALID_ARGUMENT, details: /^grpc-timeout: / },
    ];
    for (const c of cases) {
      const r = await rawHttp2Call(f.addr, f.serverCaPem, device, ping, c.headers, c.frame);
      expect({ headers: c.headers, status: r.status, details: r.details }).toEqual({
        headers: c.headers,
        status: c.code,
        details: expect.stringMatching(c.details),
      });
    }
    // a valid gzip message is refused the same way: the channel takes uncompressed messages only
    const r = await rawHttp2Call(f.addr, f.serverCaPem, device, ping, { 'grpc-encoding': 'gzip' }, grpcFrame(gzipSync(Buffer.alloc(0)), true));
    expect(r.status).toBe(status.INVALID_ARGUMENT);
    // and the same call without them is answered
    const ok = await rawHttp2Call(f.addr, f.serverCaPem, device, ping, {}, grpcFrame(Buffer.alloc(0), false));
    expect(ok.status).toBe(status.OK);
    // any printable value of either header, with either flag and random bytes: a status, never an unhandled failure
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('grpc-encoding', 'grpc-timeout'),
        fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 12 }),
        fc.boolean(),
        fc.uint8Array({ maxLength: 64 }),
        async (name, value, compressed, bytes) => {
          const r = await rawHttp2Call(f.addr, f.serverCaPem, device, ping, { [name]: value }, grpcFrame(Buffer.from(bytes), compressed));
          if (UNHANDLED.has(r.status)) throw new Error(`${name}: ${value} answered ${status[r.status]}: ${r.details}`);
        },
      ),
      { seed: 20_261_124, numRuns: 60 },
    );
  });

  it('a message over 1 MiB is RESOURCE_EXHAUSTED before it is decoded', async () => {
    const big = Buffer.alloc(2 * 1024 * 1024, 0x61);
    const receipt = await refusal(unary((cb) => device.clients.device.uploadReceipt({ envelope: big }, cb)));
    expect(receipt.code).toBe(status.RESOURCE_EXHAUSTED);
    const token = await refusal(
      unary((cb) => anonClients.enrollment.enroll({ token: big.toString(), deviceName: 'x', csrDer: Buffer.alloc(0), inventory: undefined }, cb)),
    );
    expect(token.code).toBe(status.RESOURCE_EXHAUSTED);
  });

  it('wrong certificates are UNAUTHENTICATED: expired, server-only usage, a control character in the name', async () => {
    const ca = await f.ctx.cas.get(f.tenantId, new Date());
    const issue = async (o: { cn: string; usage?: 'clientAuth' | 'serverAuth'; notAfter?: Date }) => {
      const key = await newDeviceKey();
      const der = await issueCertificate(ca, {
        subjectCN: o.cn,
        publicKey: await x509.PublicKey.create(key.keys.publicKey),
        usage: o.usage ?? 'clientAuth',
        sanUris: [`spiffe://${f.tenantId}/device/${o.cn}`],
        notBefore: new Date(Date.now() - 86_400_000),
        notAfter: o.notAfter ?? new Date(Date.now() + 86_400_000),
      });
      return channelCredentials(f.serverCaPem, { keyPem: key.keyPem, certPem: encodePem(der, 'CERTIFICATE') });
    };
    const creds: [string, ChannelCredentials][] = [
      ['expired', await issue({ cn: 'dev-hostile', notAfter: new Date(Date.now() - 60_000) })],
      ['serverAuth only', await issue({ cn: 'dev-hostile', usage: 'serverAuth' })],
      ['NUL in the name', await issue({ cn: 'dev\u0000hostile' })],
    ];
    for (const [what, cred] of creds) {
      const c = clientsFor(f.addr, cred);
      try {
        const r = await refusal(unary((cb) => c.device.ping({}, cb)));
        expect({ what, code: r.code }).toEqual({ what, code: status.UNAUTHENTICATED });
      } finally {
        c.close();
      }
    }
    // and the server still answers its own device
    await unary((cb) => device.clients.device.ping({}, cb));
  });
});

/** One length-prefixed gRPC message (compressed flag, 4-byte length, bytes). */
function grpcFrame(bytes: Buffer, compressed: boolean): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(compressed ? 1 : 0, 0);
  head.writeUInt32BE(bytes.length, 1);
  return Buffer.concat([head, bytes]);
}

/** A gRPC call over a raw HTTP/2 stream, so headers a gRPC client never sends can be sent. */
function rawHttp2Call(
  addr: string,
  caPem: string,
  device: EnrolledDevice,
  path: string,
  headers: Record<string, string>,
  frame: Buffer,
): Promise<{ status: number; details: string }> {
  return new Promise((resolve, reject) => {
    const session = connect(`https://${addr}`, { ca: caPem, key: device.key.keyPem, cert: device.certPem, servername: DEVICE_CHANNEL_TLS_NAME });
    session.on('error', reject);
    const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...headers });
    let result: { status: number; details: string } | undefined;
    const take = (h: Record<string, unknown>) => {
      if (h['grpc-status'] !== undefined) result = { status: Number(h['grpc-status']), details: decodeURIComponent(String(h['grpc-message'] ?? '')) };
    };
    stream.on('response', take);
    stream.on('trailers', take);
    stream.on('data', () => undefined);
    stream.on('error', reject);
    stream.on('close', () => {
      session.close();
      if (result === undefined) reject(new Error(`${path}: the stream closed without a grpc-status`));
      else resolve(result);
    });
    stream.end(frame);
  });
}
