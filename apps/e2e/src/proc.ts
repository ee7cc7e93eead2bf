import { spawn, type ChildProcess } from 'node:child_process';
import { E2eError } from './errors.js';

const MAX_LINES = 5000;

/** iproute2's `ip` (Debian: package iproute2). */
export const IP = '/usr/sbin/ip';

/**
 * A child process whose stdout and stderr lines are kept (bounded) so tests can wait for a
 * line and show the tail when something goes wrong.
 */
export class Proc {
  /** Every process still running, so a caller that gives up (demo timeout) can end them all. */
  private static readonly live = new Set<Proc>();
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private listeners = new Set<() => void>();
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;

  constructor(
    readonly name: string,
    file: string,
    args: string[],
    env: NodeJS.ProcessEnv,
    opts: { execArgv?: string[]; echo?: boolean; exec?: boolean; netns?: string } = {},
  ) {
    // exec: `file` is an executable of its own (an installed binary), not a script for this node
    const argv = opts.exec ? [file, ...args] : [process.execPath, ...(opts.execArgv ?? []), file, ...args];
    // netns: run in that network namespace; `ip netns exec` execs the command, so the pid (and
    // a SIGKILL sent to it) is the command's own
    const [cmd, ...rest] = opts.netns === undefined ? argv : [IP, 'netns', 'exec', opts.netns, ...argv];
    this.child = spawn(cmd!, rest, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const onChunk = (stream: 'out' | 'err') => {
      let partial = '';
      return (d: Buffer) => {
        const parts = (partial + d.toString('utf8')).split('\n');
        partial = parts.pop() ?? '';
        for (const l of parts) this.push(l, opts.echo === true ? stream : undefined);
      };
    };
    Proc.live.add(this);
    this.child.stdout!.on('data', onChunk('out'));
    this.child.stderr!.on('data', onChunk('err'));
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        Proc.live.delete(this);
        for (const l of this.listeners) l();
        resolve(this.exitInfo);
      });
    });
  }

  private push(line: string, echo: 'out' | 'err' | undefined): void {
    this.lines.push(line);
    if (this.lines.length > MAX_LINES) this.lines.splice(0, this.lines.length - MAX_LINES);
    if (echo) process.stderr.write(`[${this.name}] ${line}\n`);
    for (const l of this.listeners) l();
  }

  /** Stops every process this module started and that is still running. */
  static async stopAll(): Promise<void> {
    await Promise.allSettled([...Proc.live].map((p) => p.stop()));
  }

  get running(): boolean {
    return this.exitInfo === undefined;
  }

  /** The last `n` lines, for failure messages. */
  tail(n = 30): string {
    return this.lines.slice(-n).join('\n');
  }

  /**
   * Resolves with the first line (already seen or future) matching `re`; fails on exit or
   * timeout. With `idle`, the timeout counts from the process's last line instead of from the
   * call: a start that keeps logging its steps is waited for however slow a busy machine makes it.
   */
  waitForLine(re: RegExp, timeoutMs = 30_000, from = 0, opts: { idle?: boolean } = {}): Promise<RegExpExecArray> {
    return new Promise((resolve, reject) => {
      let at = from;
      let seen = this.lines.length;
      const expire = () =>
        done(() =>
          reject(
            new E2eError('TIMEOUT', `${this.name}: no line matching ${re} within ${timeoutMs} ms${opts.idle ? ' of its last line' : ''}:\n${this.tail()}`),
          ),
        );
      let timer = setTimeout(expire, timeoutMs);
      const check = () => {
        for (; at < this.lines.length; at++) {
          const m = re.exec(this.lines[at]!);
          if (m) return done(() => resolve(m));
        }
        if (this.exitInfo !== undefined) {
          done(() =>
            reject(
              new E2eError('PROCESS_EXITED', `${this.name} exited (${this.exitInfo!.code ?? this.exitInfo!.signal}) before printing ${re}:\n${this.tail()}`),
            ),
          );
        } else if (opts.idle && this.lines.length > seen) {
          seen = this.lines.length;
          clearTimeout(timer);
          timer = setTimeout(expire, timeoutMs);
        }
      };
      const done = (f: () => void) => {
        clearTimeout(timer);
        this.listeners.delete(check);
        f();
      };
      this.listeners.add(check);
      check();
    });
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit. */
  async stop(graceMs = 10_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.exitInfo !== undefined) return this.exitInfo;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** A real SIGKILL (crash tests): no cleanup runs in the child. */
  async kill(): Promise<void> {
    if (this.exitInfo !== undefined) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }
}
