import { connect, createServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A device's network link, as a TCP proxy between one agent and the server's device port:
 * it counts the bytes the server sends (the device channel is mTLS end to end, so this is what
 * crossed the link: TLS records, HTTP/2 frames and the payload in them), throttles them, and
 * drops the link on command or after a number of bytes, either coming back at once or staying
 * down (every new connection is closed as soon as it is accepted) until `up()`.
 */
export class LinkProxy {
  /** Bytes the server sent towards the device since the proxy started. */
  downstream = 0;
  /** Connections accepted (including those closed at once while the link is down). */
  connections = 0;
  private readonly open = new Set<{ client: Socket; upstream: Socket }>();
  private bytesPerSecond = 0;
  private isDown = false;
  private cut: { at: number; then: 'up' | 'down'; done: () => void } | undefined;

  private constructor(
    private readonly server: Server,
    readonly addr: string,
  ) {}

  /** Listens on a free loopback port and forwards to `target` (`host:port`). */
  static async start(target: string): Promise<LinkProxy> {
    const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const proxy = new LinkProxy(server, `127.0.0.1:${(server.address() as { port: number }).port}`);
    server.on('connection', (client: Socket) => proxy.accept(client, host, port));
    return proxy;
  }

  /** Server-to-device bytes per second from now on (0: as fast as loopback goes). */
  throttle(bytesPerSecond: number): void {
    this.bytesPerSecond = bytesPerSecond;
  }

  /** Drops every connection once `bytes` more have gone to the device; then the link is up again or stays down. Resolves at the cut. */
  cutAfter(bytes: number, then: 'up' | 'down'): Promise<void> {
    return new Promise((resolve) => {
      this.cut = { at: this.downstream + bytes, then, done: resolve };
    });
  }

  /** Drops every connection and refuses new ones until `up()`. */
  down(): void {
    this.isDown = true;
    for (const c of this.open) this.drop(c);
  }

  up(): void {
    this.isDown = false;
  }

  async stop(): Promise<void> {
    for (const c of this.open) this.drop(c);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private drop(c: { client: Socket; upstream: Socket }): void {
    c.client.destroy();
    c.upstream.destroy();
    this.open.delete(c);
  }

  private accept(client: Socket, host: string, port: number): void {
    this.connections += 1;
    if (this.isDown) {
      client.destroy();
      return;
    }
    const upstream = connect(port, host);
    const c = { client, upstream };
    this.open.add(c);
    const close = () => this.drop(c);
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    // one chunk at a time: counted, cut where the budget ends, then paced
    upstream.on('data', (chunk: Buffer) => {
      upstream.pause();
      void this.forward(c, chunk).then(() => {
        if (this.open.has(c)) upstream.resume();
      });
    });
  }

  private async forward(c: { client: Socket; upstream: Socket }, chunk: Buffer): Promise<void> {
    const cut = this.cut;
    if (cut !== undefined && this.downstream + chunk.length >= cut.at) {
      const part = chunk.subarray(0, Math.max(0, cut.at - this.downstream));
      this.downstream += part.length;
      await new Promise<void>((resolve) => c.client.write(part, () => resolve()));
      this.cut = undefined;
      if (cut.then === 'down') this.isDown = true;
      for (const o of this.open) this.drop(o);
      cut.done();
      return;
    }
    this.downstream += chunk.length;
    c.client.write(chunk);
    if (this.bytesPerSecond > 0) await sleep(Math.ceil((chunk.length / this.bytesPerSecond) * 1000));
  }
}
