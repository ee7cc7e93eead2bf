import { AgentError } from '../errors.js';
import { EVENTS, type Event } from '../state-machine/events.js';
import { isState, type State } from '../state-machine/states.js';
import { decodeTxPatch, type TxPatch } from './tx-data.js';

/**
 * The version every record carries (`"v"`). A record of another version is refused with
 * JOURNAL_VERSION_UNSUPPORTED, never guessed at: a change of the record shape bumps this
 * and adds a reader for the old version to `READERS` that migrates it.
 */
export const JOURNAL_VERSION = 1;

/** `resumed`: a restart picked the transaction up; `snapshot`: facts without a state change. */
export type RecordEvent = Event | 'resumed' | 'snapshot';

export type JournalRecord =
  | { v: typeof JOURNAL_VERSION; seq: number; at: string; kind: 'online' }
  | { v: typeof JOURNAL_VERSION; seq: number; at: string; kind: 'tx'; tx: string; state: State; event: RecordEvent; data?: TxPatch; resumptions?: number };

type Reader = (r: Record<string, unknown>, where: string) => JournalRecord;

function corrupt(where: string, field: string, msg: string): AgentError {
  return new AgentError('JOURNAL_CORRUPT', `${where}: ${field} ${msg}`, { field });
}

function readV1(r: Record<string, unknown>, where: string): JournalRecord {
  if (typeof r.seq !== 'number' || !Number.isSafeInteger(r.seq)) throw corrupt(where, 'seq', 'must be an integer');
  if (typeof r.at !== 'string') throw corrupt(where, 'at', 'must be a timestamp');
  const head = { v: JOURNAL_VERSION, seq: r.seq, at: r.at } as const;
  if (r.kind === 'online') return { ...head, kind: 'online' };
  if (r.kind !== 'tx') throw corrupt(where, 'kind', 'must be "tx" or "online"');
  if (typeof r.tx !== 'string' || r.tx === '') throw corrupt(where, 'tx', 'must be a transaction id');
  if (!isState(r.state)) throw corrupt(where, 'state', `${JSON.stringify(r.state)} is not a state`);
  const event = r.event === 'resumed' || r.event === 'snapshot' ? r.event : EVENTS.find((e) => e === r.event);
  if (event === undefined) throw corrupt(where, 'event', `${JSON.stringify(r.event)} is not an event`);
  if (r.resumptions !== undefined && (typeof r.resumptions !== 'number' || !Number.isSafeInteger(r.resumptions) || r.resumptions < 0)) {
    throw corrupt(where, 'resumptions', 'must be an integer >= 0');
  }
  return {
    ...head,
    kind: 'tx',
    tx: r.tx,
    state: r.state,
    event,
    ...(r.data !== undefined ? { data: decodeTxPatch(r.data, where) } : {}),
    ...(r.resumptions !== undefined ? { resumptions: r.resumptions } : {}),
  };
}

/** One reader per version this agent understands; older ones migrate to the current shape. */
const READERS: Readonly<Record<number, Reader>> = { 1: readV1 };

/** Parses one complete journal line; `where` names it in errors (`journal.jsonl line 3`). */
export function decodeRecord(line: string, where: string): JournalRecord {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw corrupt(where, 'line', 'is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw corrupt(where, 'line', 'is not a JSON object');
  const r = value as Record<string, unknown>;
  const read = typeof r.v === 'number' ? READERS[r.v] : undefined;
  if (read === undefined) {
    const known = Object.keys(READERS).join(', ');
    throw new AgentError('JOURNAL_VERSION_UNSUPPORTED', `${where}: journal record version ${JSON.stringify(r.v)}; this agent reads version ${known}`, {
      field: 'v',
    });
  }
  return read(r, where);
}
