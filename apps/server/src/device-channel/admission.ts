import type { Http2Session, IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { Server } from '@grpc/grpc-js';
import { grpcHttp2Servers } from './connections.js';
import { ServerError } from '../errors/server-error.js';

/** The metadata key that carries a capacity refusal from the HTTP/2 stream to the interceptor. */
export const REFUSED_CAPACITY = 'svc-refused-capacity';

/** The trailer that tells a refused device how long to wait (milliseconds, decimal). */
export const RETRY_AFTER_MS = 'retry-after-ms';

/** DEVICE_CHANNEL_BUSY with the wait the device is told (grpc-status.ts sends it as `retry-after-ms`). */
export class ChannelBusyError extends ServerError<'DEVICE_CHANNEL_BUSY'> {
  constructor(
    readonly retryAfterMs: number,
    max: number,
  ) {
    super('DEVICE_CHANNEL_BUSY', `device channel: this server holds its maximum of ${max} device connections; connect again in ${retryAfterMs} ms`);
  }
}

/**
 * Admits at most `max` connections to the device port at once. A gRPC status can only
 * travel on a call, so a connection beyond the cap still completes TLS and HTTP/2; every call
 * on it is then answered DEVICE_CHANNEL_BUSY (RESOURCE_EXHAUSTED) with `retry-after-ms`, before
 * any message is read, and the connection is closed (after that call, or after
 * `refusedLingerMs` when it sends none). A refused connection never takes an admitted one's
 * place later, even when one frees up: the device connects again after the wait.
 *
 * Sessions, not sockets, are counted: HTTP/2 hands each stream its session, and a session
 * lives exactly as long as its connection.
 */
export class ConnectionAdmission {
  private admittedNow = 0;
  private refusedTotal = 0;
  private readonly refused = new WeakSet<Http2Session>();

  constructor(
    readonly max: number,
    readonly retryAfterMs: number,
    private readonly refusedLingerMs: number,
  ) {}

  attach(server: Server): void {
    for (const http2 of grpcHttp2Servers(server)) {
      http2.prependListener('session', (session: Http2Session) => {
        if (this.admittedNow < this.max) {
          this.admittedNow += 1;
          session.once('close', () => {
            this.admittedNow -= 1;
          });
          return;
        }
        this.refusedTotal += 1;
        this.refused.add(session);
        const linger = setTimeout(() => session.destroy(), this.refusedLingerMs);
        linger.unref();
        session.once('close', () => clearTimeout(linger));
      });
      // before grpc-js reads the headers: a client cannot send the marker itself
      http2.prependListener('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
        delete headers[REFUSED_CAPACITY];
        const session = stream.session;
        if (session === undefined || !this.refused.has(session)) return;
        headers[REFUSED_CAPACITY] = String(this.retryAfterMs);
        // GOAWAY: this call is still answered, no new one starts on this connection
        session.close();
      });
    }
  }

  /** The refusal for a call whose stream was marked (message-guard.ts's interceptor). */
  refusal(): ChannelBusyError {
    return new ChannelBusyError(this.retryAfterMs, this.max);
  }

  /** Connections admitted and open now. */
  get admitted(): number {
    return this.admittedNow;
  }

  /** Connections refused since the start. */
  get refusedCount(): number {
    return this.refusedTotal;
  }
}
