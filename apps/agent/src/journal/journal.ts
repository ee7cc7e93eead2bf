import { join } from 'node:path';
import { AgentError } from '../errors.js';
import type { Event } from '../state-machine/events.js';
import { nextState } from '../state-machine/transitions.js';
import type { State } from '../state-machine/states.js';
import { nodeJournalIo, type JournalIo } from './io.js';
import { JOURNAL_VERSION, decodeRecord, type JournalRecord } from './record.js';
import type { TxData, TxFacts } from './tx-data.js';

export interface TxContext {
  tx: string;
  state: State;
  /** Every fact recorded for the transaction so far, later records overriding earlier. */
  data: TxData;
  /** How many times an agent start resumed this transaction (loop guard). */
  resumptions: number;
}

export interface JournalOptions {
  io?: JournalIo;
  now?: () => Date;
}

const FILE = 'journal.jsonl';
const encoder = new TextEncoder();

/**
 * Append-only crash journal: one JSON line per state change, fsynced before the change is
 * acted on. A torn final line (power cut mid-write) is ignored; compaction rewrites the
 * file atomically as one snapshot line per transaction.
 */
export class Journal {
  readonly path: string;
  private readonly io: JournalIo;
  private readonly now: () => Date;
  private readonly txs = new Map<string, TxContext>();
  private seq = 0;
  private online: Date | null = null;
  /** A failed append may have left partial bytes: rewrite before the next append. */
  private needsRepair = false;

  private constructor(dir: string, opts: JournalOptions) {
    this.path = join(dir, FILE);
    this.io = opts.io ?? nodeJournalIo;
    this.now = opts.now ?? (() => new Date());
  }

  static async open(dir: string, opts: JournalOptions = {}): Promise<Journal> {
    const journal = new Journal(dir, opts);
    const bytes = await journal.io.read(journal.path);
    if (bytes === null) return journal;
    const text = Buffer.from(bytes).toString('utf8');
    const lines = text.split('\n');
    const tail = lines.pop() ?? '';
    // A final line without its newline was torn by a crash mid-append: the change it
    // described never happened as far as the agent is concerned.
    if (tail !== '') journal.needsRepair = true;
    lines.forEach((line, i) => {
      if (line === '') return;
      journal.apply(decodeRecord(line, `journal ${journal.path} line ${i + 1}`), `line ${i + 1}`);
    });
    if (journal.needsRepair) await journal.compact();
    return journal;
  }

  get lastOnlineAt(): Date | null {
    return this.online;
  }

  get(tx: string): TxContext | undefined {
    const ctx = this.txs.get(tx);
    return ctx === undefined ? undefined : { ...ctx, data: { ...ctx.data } };
  }

  /** Every transaction the journal holds, oldest first (compaction keeps what recovery needs). */
  all(): TxContext[] {
    return [...this.txs.values()].map((t) => ({ ...t, data: { ...t.data } }));
  }

  /** Transactions whose receipt has not been reported yet, oldest first. */
  unfinished(): TxContext[] {
    return [...this.txs.values()].filter((t) => t.state !== 'reported').map((t) => ({ ...t, data: { ...t.data } }));
  }

  /** spec §3 rule 5: the first record of a transaction is its verified desired state. */
  async begin(tx: string, data: TxData): Promise<TxContext> {
    if (this.txs.has(tx)) throw new AgentError('JOURNAL_CORRUPT', `transaction ${tx} already journaled`, { field: 'tx' });
    await this.write({ v: JOURNAL_VERSION, seq: this.seq + 1, at: this.stamp(), kind: 'tx', tx, state: 'desired-persisted', event: 'verified', data });
    return this.get(tx)!;
  }

  /** Moves a transaction along the transition table and makes it durable before returning. */
  async transition(tx: string, event: Event, data?: TxFacts): Promise<TxContext> {
    const ctx = this.require(tx);
    const state = nextState(ctx.state, event);
    await this.write({ v: JOURNAL_VERSION, seq: this.seq + 1, at: this.stamp(), kind: 'tx', tx, state, event, ...(data ? { data } : {}) });
    return this.get(tx)!;
  }

  /** Records facts without changing state (a member's previous digest before it is touched). */
  async note(tx: string, data: TxFacts): Promise<TxContext> {
    const ctx = this.require(tx);
    await this.write({
      v: JOURNAL_VERSION,
      seq: this.seq + 1,
      at: this.stamp(),
      kind: 'tx',
      tx,
      state: ctx.state,
      event: 'snapshot',
      data,
      resumptions: ctx.resumptions,
    });
    return this.get(tx)!;
  }

  /** Counts one more resumption of an interrupted transaction; returns the new count. */
  async resumed(tx: string): Promise<number> {
    const ctx = this.require(tx);
    await this.write({ v: JOURNAL_VERSION, seq: this.seq + 1, at: this.stamp(), kind: 'tx', tx, state: ctx.state, event: 'resumed' });
    return this.require(tx).resumptions;
  }

  /** Remembers a successful contact with the server: the offline-age clock of spec §8. */
  async noteOnline(at: Date = this.now()): Promise<void> {
    await this.write({ v: JOURNAL_VERSION, seq: this.seq + 1, at: at.toISOString(), kind: 'online' });
  }

  /** Rewrites the journal atomically as one line per live transaction; drops reported ones. */
  async compact(): Promise<void> {
    const lines: JournalRecord[] = [];
    let seq = this.seq;
    if (this.online) lines.push({ v: JOURNAL_VERSION, seq: ++seq, at: this.online.toISOString(), kind: 'online' });
    for (const ctx of this.txs.values()) {
      if (ctx.state === 'reported') continue;
      lines.push({
        v: JOURNAL_VERSION,
        seq: ++seq,
        at: this.stamp(),
        kind: 'tx',
        tx: ctx.tx,
        state: ctx.state,
        event: 'snapshot',
        data: ctx.data,
        resumptions: ctx.resumptions,
      });
    }
    const bytes = encoder.encode(lines.map((l) => JSON.stringify(l) + '\n').join(''));
    try {
      await this.io.replace(this.path, bytes);
    } catch (cause) {
      this.needsRepair = true;
      throw new AgentError('JOURNAL_WRITE_FAILED', `journal compaction of ${this.path} failed`, { cause, field: 'journal' });
    }
    for (const [tx, ctx] of this.txs) if (ctx.state === 'reported') this.txs.delete(tx);
    this.seq = seq;
    this.needsRepair = false;
  }

  private async write(record: JournalRecord): Promise<void> {
    if (this.needsRepair) await this.compact();
    try {
      await this.io.append(this.path, encoder.encode(JSON.stringify(record) + '\n'));
    } catch (cause) {
      // The in-memory state does not advance: the caller must not act on an unjournaled change.
      this.needsRepair = true;
      throw new AgentError('JOURNAL_WRITE_FAILED', `journal append to ${this.path} failed`, { cause, field: 'journal' });
    }
    this.apply(record);
  }

  private apply(record: JournalRecord, where = 'append'): void {
    this.seq = Math.max(this.seq, record.seq);
    if (record.kind === 'online') {
      const at = new Date(record.at);
      if (this.online === null || at > this.online) this.online = at;
      return;
    }
    const prev = this.txs.get(record.tx);
    let ctx: TxContext;
    if (prev !== undefined) {
      ctx = prev;
      if (record.data) ctx.data = { ...ctx.data, ...record.data, desired: record.data.desired ?? ctx.data.desired };
    } else {
      // spec §3 rule 5: a transaction starts with its verified desired state
      const desired = record.data?.desired;
      if (desired === undefined) {
        throw new AgentError('JOURNAL_CORRUPT', `journal ${this.path} ${where}: first record of ${record.tx} has no desired state`, { field: 'data.desired' });
      }
      ctx = { tx: record.tx, state: record.state, data: { ...record.data, desired }, resumptions: 0 };
    }
    ctx.state = record.state;
    if (record.event === 'resumed') ctx.resumptions += 1;
    if (record.event === 'snapshot' && record.resumptions !== undefined) ctx.resumptions = record.resumptions;
    this.txs.set(record.tx, ctx);
  }

  private require(tx: string): TxContext {
    const ctx = this.txs.get(tx);
    if (ctx === undefined) throw new AgentError('JOURNAL_CORRUPT', `transaction ${tx} is not journaled`, { field: 'tx' });
    return ctx;
  }

  private stamp(): string {
    return this.now().toISOString();
  }
}
