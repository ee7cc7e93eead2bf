import type { Http2Server, Http2Session } from 'node:http2';
import { Metadata, Server, ServerCredentials, type sendUnaryData, type ServerUnaryCall, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { DeviceServiceService, EnrollmentServiceService } from '@svc/device-proto';
import { issueCert, makeCa, makeServerCert } from '@svc/test-kit';
import { DEVICE_CHANNEL_TLS_NAME } from '../../src/channel/client.js';
import { requireTool } from './tools.js';

/** PEM material of a device channel: a server CA and leaf, a device CA and one device. */
export type ChannelPki = Record<'serverCa' | 'serverKey' | 'serverCert' | 'deviceCa' | 'deviceKey' | 'deviceCert', string>;

/** Made with the OpenSSL CLI in `dir`: P-256 keys, the extensions the real channel uses. */
export function makeChannelPki(dir: string): Promise<ChannelPki> {
  requireTool('openssl');
  const serverCa = makeCa(dir, 'server-ca', { days: 2 });
  const deviceCa = makeCa(dir, 'device-ca', { days: 2 });
  const server = makeServerCert(dir, 'server', serverCa, [`DNS:${DEVICE_CHANNEL_TLS_NAME}`], { days: 2 });
  const device = issueCert(dir, 'device', deviceCa, { ext: ['extendedKeyUsage=clientAuth'], days: 2 });
  return Promise.resolve({
    serverCa: serverCa.certPem,
    serverKey: server.keyPem,
    serverCert: server.certPem,
    deviceCa: deviceCa.certPem,
    deviceKey: device.keyPem,
    deviceCert: device.certPem,
  });
}

/** A call the scripted service answered: which method, on which connection (client address:port), when. */
export interface SeenCall {
  method: string;
  peer: string;
  at: number;
}

/** A scripted answer: a failure (status, optional trailers) or a response. */
export type Scripted<T> = { fail: number; trailers?: Record<string, string> } | { ok: T; delayMs?: number };

export interface ScriptedDeviceService {
  server: Server;
  address: string;
  calls: SeenCall[];
  /** HTTP/2 connections the server accepted, and those closed since. */
  sessions: { opened: number; closed: number };
  close(): void;
}

/**
 * A real gRPC DeviceService and EnrollmentService over mTLS on loopback (the device CA of `pki`
 * trusted; `requireClientCert` false for enrollment) whose answers
 * the test scripts per method: `script[method](n)` answers the nth call (0-based). Methods
 * without a script never answer. Records every call with its connection and counts the
 * HTTP/2 sessions, so a test sees when the agent connects and disconnects.
 */
export async function scriptedDeviceService(
  pki: ChannelPki,
  script: Record<string, (n: number, request: unknown) => Scripted<unknown>>,
  /** false: server TLS only, as the enrollment of a device without a certificate needs. */
  requireClientCert = true,
): Promise<ScriptedDeviceService> {
  const calls: SeenCall[] = [];
  const sessions = { opened: 0, closed: 0 };
  const server = new Server();
  const counts = new Map<string, number>();
  const handler = (method: string) => (call: ServerUnaryCall<unknown, unknown>, cb: sendUnaryData<unknown>) => {
    calls.push({ method, peer: call.getPeer(), at: Date.now() });
    const n = counts.get(method) ?? 0;
    counts.set(method, n + 1);
    const answer = script[method]?.(n, call.request);
    if (answer === undefined) return;
    if ('fail' in answer) {
      const md = new Metadata();
      for (const [k, v] of Object.entries(answer.trailers ?? {})) md.set(k, v);
      cb({ code: answer.fail, details: 'scripted', metadata: md, name: 'e', message: 'scripted' });
      return;
    }
    if (answer.delayMs === undefined) cb(null, answer.ok);
    else setTimeout(() => cb(null, answer.ok), answer.delayMs);
  };
  const impl: UntypedServiceImplementation = {};
  for (const name of Object.keys(DeviceServiceService)) impl[name] = handler(name);
  server.addService(DeviceServiceService, impl);
  server.addService(EnrollmentServiceService, { enroll: handler('enroll') });
  const creds = ServerCredentials.createSsl(
    Buffer.from(pki.deviceCa),
    [{ private_key: Buffer.from(pki.serverKey), cert_chain: Buffer.from(pki.serverCert) }],
    requireClientCert,
  );
  const port = await new Promise<number>((res, rej) => server.bindAsync('127.0.0.1:0', creds, (e, p) => (e ? rej(e) : res(p))));
  // grpc-js keeps its HTTP/2 servers in a private map (the device channel reads it the same way)
  const http2 = Reflect.get(server, 'http2Servers') as Map<Http2Server, unknown>;
  for (const h of http2.keys()) {
    h.on('session', (s: Http2Session) => {
      sessions.opened += 1;
      s.once('close', () => (sessions.closed += 1));
    });
  }
  return { server, address: `127.0.0.1:${port}`, calls, sessions, close: () => server.forceShutdown() };
}

/** A CheckIn answer with nothing to do and the interval the server asks for. */
export function checkInAnswer(intervalS: number) {
  return { assignments: [], logRequests: [], renewCertificate: false, certificateNotAfter: undefined, checkInIntervalS: intervalS, serverTime: new Date() };
}
