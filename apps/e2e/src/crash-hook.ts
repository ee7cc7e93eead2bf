/**
 * Preloaded into a real agent process (`node --import <dist/crash-hook.js>`) by the e2e crash
 * table, never part of the agent: it subscribes to the agent's crash-point channel and
 * SIGKILLs the process when the point named by SVC_E2E_CRASH_AT is reached, after writing
 * `{point, state}` (the state the journal holds at that instant) to SVC_E2E_CRASH_RECORD.
 */
import { subscribe } from 'node:diagnostics_channel';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CRASH_POINT_CHANNEL, type CrashPointMessage } from '@svc/agent';

const at = process.env.SVC_E2E_CRASH_AT ?? '';
const record = process.env.SVC_E2E_CRASH_RECORD ?? '';
const journal = join(process.env.SVC_AGENT_DATA_DIR ?? '.', 'journal', 'journal.jsonl');

/** The state of the transaction's last journal record (or of the last transaction record). */
function journaledState(tx: string | null): string | null {
  if (!existsSync(journal)) return null;
  const records = readFileSync(journal, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { kind?: string; tx?: string; state?: string })
    .filter((r) => r.kind === 'tx' && (tx === null || r.tx === tx));
  return records.at(-1)?.state ?? null;
}

if (at !== '') {
  subscribe(CRASH_POINT_CHANNEL, (message) => {
    const { point, tx } = message as CrashPointMessage;
    if (point !== at) return;
    if (record !== '') writeFileSync(record, JSON.stringify({ point, tx, state: journaledState(tx) }));
    process.kill(process.pid, 'SIGKILL');
  });
}
