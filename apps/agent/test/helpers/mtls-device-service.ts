import { execFileSync } from 'node:child_process';
import type { Http2Server, Http2Session } from 'node:http2';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Metadata, Server, ServerCredentials, type sendUnaryData, type ServerUnaryCall, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { DeviceServiceService, EnrollmentServiceService } from '@svc/device-proto';
import { DEVICE_CHANNEL_TLS_NAME } from '../../src/channel/client.js';
import { requireTool } from './tools.js';

/** PEM material of a device channel: a server CA and leaf, a device CA and one device. */
export type ChannelPki = Record<'serverCa' | 'serverKey' | 'serverCert' | 'deviceCa' | 'deviceKey' | 'deviceCert', string>;

/** Made with the OpenSSL CLI in `dir`: P-256 keys, the extensions the real channel uses. */
export async function makeChannelPki(dir: string): Promise<ChannelPki> {
  requireTool('openssl');
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ca = (name: string) =>
    run(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-addext',
      'basicConstraints=critical,CA:true',
      '-addext',
      'keyUsage=critical,keyCertSign',
    );
  const leaf = async (name: string, issuer: string, ext: string) => {
    run('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    await writeFile(join(dir, `${name}.ext`), ext);
    run(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${issuer}.pem`,
      '-CAkey',
      `${issuer}.key`,
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    );
  };
  ca('server-ca');
  ca('device-ca');
  await leaf('server', 'server-ca', `subjectAltName=DNS:${DEVICE_CHANNEL_TLS_NAME}\nextendedKeyUsage=serverAuth\n`);
  await leaf('device', 'device-ca', 'extendedKeyUsage=clientAuth\n');
  const read = (f: string) => readFile(join(dir, f), 'utf8');
  return {
    serverCa: await read('server-ca.pem'),
    serverKey: await read('server.key'),
    serverCert: await read('server.pem'),
    deviceCa: await read('device-ca.pem'),
    deviceKey: await read('device.key'),
    deviceCert: await read('device.pem'),
  };
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
