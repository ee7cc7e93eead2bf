import type { Event } from '../state-machine/events.js';
import { isState, type State } from '../state-machine/states.js';
import { EVENTS } from '../state-machine/events.js';

/** Bumped only with a reader for the old version kept beside the new one. */
export const JOURNAL_VERSION = 1;

/** Free-form transaction facts merged into the folded context (members, digests, slots...). */
export type TxData = Record<string, unknown>;

export type JournalRecord =
  | { v: 1; seq: number; at: string; kind: 'online' }
  | { v: 1; seq: number; at: string; kind: 'tx'; tx: string; state: State; event: Event | 'resumed' | 'snapshot'; data?: TxData; resumptions?: number };

/** Parses one journal line; null for anything that is not a well-formed record of a known version. */
export function parseRecord(line: string): JournalRecord | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const r = value as Record<string, unknown>;
  if (r.v !== JOURNAL_VERSION || typeof r.seq !== 'number' || typeof r.at !== 'string') return null;
  if (r.kind === 'online') return { v: 1, seq: r.seq, at: r.at, kind: 'online' };
  if (r.kind !== 'tx' || typeof r.tx !== 'string' || !isState(r.state)) return null;
  const event = r.event;
  if (event !== 'resumed' && event !== 'snapshot' && !(EVENTS as readonly unknown[]).includes(event)) return null;
  if (r.resumptions !== undefined && (typeof r.resumptions !== 'number' || !Number.isInteger(r.resumptions))) return null;
  if (r.data !== undefined && (typeof r.data !== 'object' || r.data === null || Array.isArray(r.data))) return null;
  return value as JournalRecord;
}
