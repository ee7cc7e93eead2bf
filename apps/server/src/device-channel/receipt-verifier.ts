/**
 * Receipt verification off the event loop. Verifying a receipt (parsing the envelope and the
 * embedded certificate, the device's P-256 signature, the payload rules) is about half of the
 * server's CPU per receipt and needs nothing but the receipt's bytes, the tenant CA and the
 * connection's certificate, so it runs in a few worker threads while the event loop carries
 * the calls, TLS, HTTP/2 and the database. With no threads (`threads: 0`, or a one-core
 * machine) it runs inline, the same function either way (resources/release-receipts/verify.ts).
 *
 * A refusal comes back as the same typed error (ReleaseError or ServerError, same code and
 * message), so the call's status does not depend on where the receipt was verified. A thread
 * that dies fails only the receipts it held (their devices retry) and is replaced.
 */
import type { KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { ReleaseError, type Issue, type ReleaseErrorCode } from '@svc/release-core';
import { builtFile } from '../built-file.js';
import { ServerError, type ServerErrorCode } from '../errors/server-error.js';
import { verifyReceiptBytes, type ReceiptBytesInput, type VerifiedReceiptBytes } from '../resources/release-receipts/verify.js';
import { withConnectionKey } from './connections.js';
import type { ChannelLogger } from './grpc-status.js';
import { SERVER_TUNING } from '../limits.js';

/** One receipt to verify; `publicKey` is the connection certificate's key as its handshake decoded it. */
export type VerifierInput = Omit<ReceiptBytesInput, 'crypto'> & { publicKey?: KeyObject };

export interface VerifierRequest {
  id: number;
  input: VerifierInput;
}

export type VerifierReply =
  | { id: number; ok: VerifiedReceiptBytes }
  | {
      id: number;
      error:
        | { kind: 'release'; code: ReleaseErrorCode; message: string; issues: Issue[] }
        | { kind: 'server'; code: ServerErrorCode; message: string }
        | { kind: 'error'; message: string };
    };

interface Pending {
  resolve(v: VerifiedReceiptBytes): void;
  reject(e: unknown): void;
}

interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
  /** Requests of this turn of the event loop, posted together (one message costs ~20 µs each way). */
  outbox: VerifierRequest[];
}

/** The compiled worker next to this module; from the sources (tests), the built one in dist/. */
const workerFile = (): URL => builtFile('./receipt-verifier-worker.js', import.meta.url, 'receipt verification thread');

/** Verifies one receipt here, with the connection's key when it came along: a thread runs this for each request. */
export function verifyOne(input: VerifierInput): VerifiedReceiptBytes {
  const { publicKey, ...rest } = input;
  return verifyReceiptBytes(publicKey === undefined ? rest : { ...rest, crypto: withConnectionKey({ der: rest.connectionCertificateDer, publicKey }) });
}

function revive(reply: Extract<VerifierReply, { error: unknown }>['error']): Error {
  if (reply.kind === 'release') return new ReleaseError(reply.code, reply.message, { issues: reply.issues });
  if (reply.kind === 'server') return new ServerError(reply.code, reply.message);
  return new Error(`receipt verification failed: ${reply.message}`);
}

/**
 * One thread per core but the event loop's, at most 4: the event loop keeps a core for the
 * calls themselves, and a receipt's verification takes about as long as the rest of its work.
 */
export function defaultVerifyThreads(): number {
  return Math.max(0, Math.min(4, availableParallelism() - 1));
}

export class ReceiptVerifier {
  private readonly threads: Thread[] = [];
  private readonly file: URL | undefined;
  private nextId = 1;
  private closing = false;

  /**
   * `threads` worker threads (0: verify inline on the event loop). They start with the first
   * receipt: a thread is a V8 isolate of its own (about 30 MB), which a server that receives
   * no receipts, or not yet, does not pay for.
   */
  constructor(
    private readonly threadCount: number,
    private readonly log: ChannelLogger,
  ) {
    // the worker's file is resolved now, so a server without it fails at start, not at the first receipt
    this.file = threadCount > 0 ? workerFile() : undefined;
  }

  /** Threads to run (0: inline); they start with the first receipt. */
  get size(): number {
    return this.threadCount;
  }

  /** Threads started so far. */
  get started(): number {
    return this.threads.length;
  }

  verify(input: VerifierInput): Promise<VerifiedReceiptBytes> {
    if (this.file === undefined) return new Promise((resolve) => resolve(verifyOne(input)));
    if (this.closing) return Promise.reject(new Error('receipt verification is closing: nothing stored, send the receipt again'));
    if (this.threads.length === 0) for (let i = 0; i < this.threadCount; i++) this.threads.push(this.spawn(this.file));
    // the thread with the fewest receipts in hand
    let t = this.threads[0]!;
    for (const c of this.threads) if (c.pending.size < t.pending.size) t = c;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      t.pending.set(id, { resolve, reject });
      const queued = t.outbox.push({ id, input });
      if (queued === 1) setImmediate(() => this.post(t));
      // a long batch would hold every answer in it until its last receipt is verified
      else if (queued >= SERVER_TUNING.receiptVerifyBatch) this.post(t);
    });
  }

  private post(t: Thread): void {
    if (t.outbox.length > 0) t.worker.postMessage(t.outbox.splice(0));
  }

  async close(): Promise<void> {
    this.closing = true;
    const threads = this.threads.splice(0);
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }

  private spawn(file: URL): Thread {
    const t: Thread = { worker: new Worker(file), pending: new Map(), outbox: [] };
    // an idle thread does not keep the process alive
    t.worker.unref();
    t.worker.on('message', (replies: VerifierReply[]) => {
      for (const reply of replies) {
        const p = t.pending.get(reply.id);
        if (p === undefined) continue;
        t.pending.delete(reply.id);
        if ('ok' in reply) p.resolve(reply.ok);
        else p.reject(revive(reply.error));
      }
    });
    const lost = (why: string) => {
      const held = [...t.pending.values()];
      t.pending.clear();
      t.outbox.length = 0;
      for (const p of held) p.reject(new Error(`receipt verification thread stopped (${why}): nothing stored, send the receipt again`));
      const i = this.threads.indexOf(t);
      if (i < 0 || this.closing) return;
      this.log.error({ why, receipts: held.length }, 'receipt verification thread stopped; starting another');
      this.threads[i] = this.spawn(this.file!);
    };
    t.worker.on('error', (err) => lost(err.message));
    t.worker.on('exit', (code) => lost(`exit ${code}`));
    return t;
  }
}
