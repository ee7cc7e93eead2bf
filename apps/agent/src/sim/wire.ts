import { X509Certificate } from 'node:crypto';
import { connect as http2Connect, constants as h2, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import { connect as tlsConnect, createSecureContext, type TLSSocket } from 'node:tls';
import { status } from '@grpc/grpc-js';
import { CALL_TIMEOUT_MS } from '../channel/client.js';

/**
 * The simulator's device connection: gRPC over one mTLS HTTP/2 connection, spoken directly on
 * node:tls and node:http2 rather than through a grpc-js channel. The bytes on the wire are the
 * same (HTTP/2 POST to /svc.device.v1.<Service>/<Method>, `application/grpc`, length-prefixed
 * messages encoded by @svc/device-proto's service definitions, grpc-status in the trailers), so
 * the server cannot tell the two apart; the agent itself keeps grpc-js.
 *
 * Why not grpc-js here: the fleet bench opens a connection per check-in for 100k devices, and
 * a grpc-js channel per connection cost the simulator more CPU than the server spent serving
 * it (a channel, resolver, load balancer and subchannel per device; `getPeerCertificate` for
 * every connection; the pinned CA parsed into a new OpenSSL context each time). What is left per
 * connection is what a device cannot avoid: an OpenSSL context with its key and certificate, the
 * handshake, the HTTP/2 session.
 *
 * The server is authenticated by `ServerPin`: the certificate it presents must be issued by the
 * pinned server CA, inside its validity and valid for DEVICE_CHANNEL_TLS_NAME (checked once per
 * distinct certificate, then by fingerprint), before any request is sent on the connection.
 */

/** What a unary or server-streaming method needs here; @svc/device-proto's `*Service` definitions have it. */
export interface WireMethod<Req, Res> {
  path: string;
  requestSerialize(value: Req): Buffer;
  responseDeserialize(value: Buffer): Res;
}

/** A call that ended with a gRPC status other than OK; `code` is the status number, as on grpc-js's ServiceError. */
export class WireCallError extends Error {
  constructor(
    readonly code: number,
    readonly details: string,
    /** The server's stable error code (svc-error-code trailer), when it sent one. */
    readonly errorCode?: string,
  ) {
    super(`${code} ${status[code] ?? 'UNKNOWN'}: ${details}`);
    this.name = 'WireCallError';
  }
}

/** The pinned server CA and the name every device-port certificate carries. */
export class ServerPin {
  private readonly ca: X509Certificate;
  /** Certificates already checked: fingerprint -> their validity (ms). A server has one or two. */
  private readonly checked = new Map<string, { from: number; to: number }>();

  constructor(
    caPem: string | Buffer,
    readonly name: string,
  ) {
    this.ca = new X509Certificate(caPem);
  }

  /** Throws unless `leaf` is issued by the pinned CA, valid now and for `name`. */
  check(leaf: X509Certificate | undefined, now = Date.now()): void {
    if (leaf === undefined) throw new WireCallError(status.UNAVAILABLE, 'the server presented no certificate');
    const fingerprint = leaf.fingerprint256;
    const known = this.checked.get(fingerprint);
    if (known !== undefined && known.from <= now && now <= known.to) return;
    if (!leaf.checkIssued(this.ca) || !leaf.verify(this.ca.publicKey)) {
      throw new WireCallError(status.UNAVAILABLE, `server certificate ${leaf.subject} is not issued by the pinned server CA`);
    }
    const from = Date.parse(leaf.validFrom);
    const to = Date.parse(leaf.validTo);
    if (now < from || now > to) throw new WireCallError(status.UNAVAILABLE, `server certificate outside its validity (${leaf.validFrom} .. ${leaf.validTo})`);
    if (leaf.checkHost(this.name) === undefined) throw new WireCallError(status.UNAVAILABLE, `server certificate is not valid for ${this.name}`);
    if (this.checked.size >= 16) this.checked.clear();
    this.checked.set(fingerprint, { from, to });
  }
}

function hostAndPort(address: string): { host: string; port: number } {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(address);
  if (m === null) throw new Error(`server address ${JSON.stringify(address)} is not host:port`);
  return { host: m[1]!, port: Number(m[2]) };
}

function header(h: IncomingHttpHeaders | undefined, name: string): string | undefined {
  const v = h?.[name];
  return Array.isArray(v) ? v[0] : v;
}

/** grpc-message is percent-encoded (gRPC over HTTP/2); kept as sent when it does not decode. */
function grpcMessage(h: IncomingHttpHeaders | undefined): string {
  const s = header(h, 'grpc-message');
  if (s === undefined) return '';
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The length-prefixed gRPC messages of a response body (uncompressed: no grpc-accept-encoding is offered). */
function messagesOf(body: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  while (at < body.length) {
    if (body.length - at < 5) throw new WireCallError(status.INTERNAL, 'response ends inside a message header');
    if (body[at] !== 0) throw new WireCallError(status.INTERNAL, 'compressed response message (none was offered)');
    const n = body.readUInt32BE(at + 1);
    if (body.length - at - 5 < n) throw new WireCallError(status.INTERNAL, 'response ends inside a message');
    out.push(body.subarray(at + 5, at + 5 + n));
    at += 5 + n;
  }
  return out;
}

/** One device's connection; calls wait for the handshake and the server check. */
export class WireConnection {
  private readonly socket: TLSSocket;
  private readonly ready: Promise<ClientHttp2Session>;
  private session: ClientHttp2Session | undefined;
  private ended = false;
  private readonly onEnd: (() => void) | undefined;
  /** `:authority` of every call: the device port's name, as grpc-js sends it (no port). */
  private readonly authority: string;

  constructor(o: { address: string; keyPem: string | Buffer; certPem: string | Buffer; pin: ServerPin; onEnd?: () => void }) {
    const { host, port } = hostAndPort(o.address);
    this.onEnd = o.onEnd;
    this.authority = o.pin.name;
    this.socket = tlsConnect({
      host,
      port,
      servername: o.pin.name,
      secureContext: createSecureContext({ key: o.keyPem, cert: o.certPem }),
      ALPNProtocols: ['h2'],
      // the server is checked against the pin below, before any request goes out
      rejectUnauthorized: false,
    });
    this.ready = new Promise<ClientHttp2Session>((resolve, reject) => {
      const fail = (e: Error) => {
        this.socket.removeListener('error', fail);
        this.socket.removeListener('close', closed);
        this.end();
        reject(e instanceof WireCallError ? e : new WireCallError(status.UNAVAILABLE, `connection: ${e.message}`));
      };
      const closed = () => fail(new Error('closed before the handshake completed'));
      this.socket.once('error', fail);
      this.socket.once('close', closed);
      this.socket.once('secureConnect', () => {
        this.socket.removeListener('error', fail);
        this.socket.removeListener('close', closed);
        try {
          o.pin.check(this.socket.getPeerX509Certificate());
          if (this.socket.alpnProtocol !== 'h2') throw new WireCallError(status.UNAVAILABLE, 'the server did not agree to HTTP/2');
        } catch (e) {
          this.socket.destroy();
          fail(e as Error);
          return;
        }
        const session = http2Connect(`https://${o.pin.name}`, { createConnection: () => this.socket });
        session.on('error', () => undefined); // every stream open on it fails with its own error
        session.once('goaway', () => this.end());
        session.once('close', () => this.end());
        this.session = session;
        resolve(session);
      });
    });
    // a call awaits `ready`; nobody may be waiting when the connection fails before one is made
    this.ready.catch(() => undefined);
  }

  /** Takes no new calls from now on; tells the owner once. */
  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd?.();
  }

  /** The handshake is done and the connection still takes calls. */
  get usable(): boolean {
    return this.session !== undefined && !this.ended;
  }

  async unary<Req, Res>(m: WireMethod<Req, Res>, request: Req, timeoutMs = CALL_TIMEOUT_MS): Promise<Res> {
    const messages = await this.call(m.path, m.requestSerialize(request), timeoutMs);
    if (messages.length !== 1) throw new WireCallError(status.INTERNAL, `${m.path}: ${messages.length} response messages for a unary call`);
    return m.responseDeserialize(messages[0]!);
  }

  /** Every message of a server-streaming call (for small answers: they are all held). */
  async serverStream<Req, Res>(m: WireMethod<Req, Res>, request: Req, timeoutMs = CALL_TIMEOUT_MS): Promise<Res[]> {
    return (await this.call(m.path, m.requestSerialize(request), timeoutMs)).map((b) => m.responseDeserialize(b));
  }

  /**
   * The deadline covers the connection too, as grpc-js's does: a handshake that never completes
   * (the server's accept queue overflowed and dropped the connection while the client believes
   * it open, so TCP retransmits the ClientHello for up to 15 minutes) fails the call at its
   * deadline, and the connection is given up.
   */
  private async call(path: string, body: Buffer, timeoutMs: number): Promise<Buffer[]> {
    const started = performance.now();
    let session: ClientHttp2Session;
    if (this.session !== undefined) session = this.session;
    else {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          this.socket.destroy();
          reject(new WireCallError(status.DEADLINE_EXCEEDED, `${path}: no connection within ${timeoutMs} ms`));
        }, timeoutMs);
      });
      try {
        session = await Promise.race([this.ready, late]);
      } finally {
        clearTimeout(timer);
      }
    }
    if (this.ended) throw new WireCallError(status.UNAVAILABLE, 'connection closed');
    const remainingMs = Math.max(1, Math.round(timeoutMs - (performance.now() - started)));
    const frame = Buffer.allocUnsafe(5 + body.length);
    frame[0] = 0;
    frame.writeUInt32BE(body.length, 1);
    body.copy(frame, 5);
    return new Promise<Buffer[]>((resolve, reject) => {
      let settled = false;
      const settle = (e: WireCallError | undefined, value?: Buffer[]) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (e === undefined) resolve(value!);
        else reject(e);
      };
      let stream: ClientHttp2Stream;
      try {
        stream = session.request({
          [h2.HTTP2_HEADER_METHOD]: 'POST',
          [h2.HTTP2_HEADER_AUTHORITY]: this.authority,
          [h2.HTTP2_HEADER_PATH]: path,
          [h2.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
          te: 'trailers',
          'grpc-timeout': `${remainingMs}m`,
        });
      } catch (e) {
        // the session went away (GOAWAY, closed) between the check above and this call
        reject(new WireCallError(status.UNAVAILABLE, `${path}: ${(e as Error).message}`));
        return;
      }
      const timer = setTimeout(() => {
        stream.close(h2.NGHTTP2_CANCEL);
        settle(new WireCallError(status.DEADLINE_EXCEEDED, `${path}: no answer within ${timeoutMs} ms`));
      }, remainingMs);
      const chunks: Buffer[] = [];
      let headers: IncomingHttpHeaders | undefined;
      let trailers: IncomingHttpHeaders | undefined;
      stream.on('response', (h) => (headers = h));
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('trailers', (t: IncomingHttpHeaders) => (trailers = t));
      stream.on('error', (e: Error) => settle(new WireCallError(status.UNAVAILABLE, `${path}: ${e.message}`)));
      stream.on('close', () => {
        // a Trailers-Only answer (an error before any message) carries the status in its headers
        const end = trailers ?? headers;
        const code = header(end, 'grpc-status');
        if (code === undefined) {
          const why = headers === undefined ? `stream reset (${stream.rstCode})` : `HTTP ${header(headers, ':status') ?? '?'} without grpc-status`;
          settle(new WireCallError(status.UNAVAILABLE, `${path}: ${why}`));
          return;
        }
        if (Number(code) !== (status.OK as number)) {
          settle(new WireCallError(Number(code), grpcMessage(end), header(end, 'svc-error-code')));
          return;
        }
        try {
          settle(undefined, messagesOf(Buffer.concat(chunks)));
        } catch (e) {
          settle(e as WireCallError);
        }
      });
      stream.end(frame);
    });
  }

  /** Ends the connection once its calls are done (GOAWAY, then the socket closes). */
  close(): void {
    this.end();
    if (this.session !== undefined) this.session.close();
    else this.socket.destroy();
  }
}
