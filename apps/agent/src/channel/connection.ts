import type { ChannelCredentials } from '@grpc/grpc-js';
import type { ConnectionMode } from '../config.js';
import { ChannelClients } from './client.js';

export interface DeviceConnectionOptions {
  address: string;
  /** Read at every (re)connection: a renewal's certificate is used from the next one on. */
  credentials(): ChannelCredentials;
  mode: ConnectionMode;
  /** per-check-in: close once no call has been in flight this long. */
  idleCloseMs: number;
  /** A connection was opened or closed (logs, tests, the simulator's counts). */
  onChange?(event: 'open' | 'close', why: 'idle' | 'reset' | 'stop' | 'call'): void;
}

/**
 * The agent's connection to the device channel. Every call runs inside `use`, which opens the
 * connection when there is none. In `per-check-in` mode the connection is closed once
 * `idleCloseMs` passed with no call in flight, so a device holds a server connection (about
 * 68 KiB of server memory) only while it works: the check-in, and what it starts (TUF refresh,
 * downloads, receipt and log uploads). A health check or an installation in between is not
 * a call: when it outlasts the idle time, the next call connects again. In `persistent` mode
 * it stays open until `reset` or `close`.
 *
 * Each connection is its own grpc-js channel with a local subchannel pool: closing the
 * channel ends the TCP connection at once (the global pool would keep it up to 10 s longer).
 */
export class DeviceConnection {
  private clients: ChannelClients | undefined;
  private inFlight = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  /** Connections opened since the start. */
  opened = 0;

  constructor(private readonly o: DeviceConnectionOptions) {}

  /** Runs `fn` with the open connection's clients, opening one when needed. */
  async use<T>(fn: (clients: ChannelClients) => Promise<T>): Promise<T> {
    this.cancelIdleClose();
    if (this.clients === undefined) {
      this.clients = new ChannelClients(this.o.address, this.o.credentials(), { localPool: true });
      this.opened += 1;
      this.o.onChange?.('open', 'call');
    }
    this.inFlight += 1;
    try {
      return await fn(this.clients);
    } finally {
      this.inFlight -= 1;
      if (this.inFlight === 0 && this.o.mode === 'per-check-in') this.scheduleIdleClose();
    }
  }

  /**
   * Drops the current connection (new credentials after a renewal, or the server refused it
   * for load and closes it); the next call connects again. Calls in flight on it end with
   * CANCELLED.
   */
  reset(): void {
    this.shut('reset');
  }

  /** Closes for good at the agent's stop. */
  close(): void {
    this.shut('stop');
  }

  /** Whether a connection (grpc-js channel) is open now. */
  get isOpen(): boolean {
    return this.clients !== undefined;
  }

  private shut(why: 'idle' | 'reset' | 'stop'): void {
    this.cancelIdleClose();
    if (this.clients === undefined) return;
    this.clients.close();
    this.clients = undefined;
    this.o.onChange?.('close', why);
  }

  private scheduleIdleClose(): void {
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.inFlight === 0) this.shut('idle');
    }, this.o.idleCloseMs);
    // the idle close never keeps the process alive on its own
    this.idleTimer.unref();
  }

  private cancelIdleClose(): void {
    if (this.idleTimer === undefined) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }
}
