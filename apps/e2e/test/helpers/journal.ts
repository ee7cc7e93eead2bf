import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface JournalLine {
  kind: string;
  tx?: string;
  state?: string;
  event?: string;
  data?: Record<string, unknown>;
}

/** The agent's crash journal (`<dataDir>/journal/journal.jsonl`), one record per line. */
export async function readJournal(dataDir: string): Promise<JournalLine[]> {
  const text = await readFile(join(dataDir, 'journal', 'journal.jsonl'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as JournalLine);
}

/** Members in the order the journal recorded them as restored (`verdict: rolled-back`). */
export function rollbackOrder(lines: JournalLine[], tx: string): string[] {
  const order: string[] = [];
  for (const l of lines) {
    if (l.tx !== tx || l.data === undefined) continue;
    for (const [k, v] of Object.entries(l.data)) {
      const verdict = (v as { verdict?: unknown } | null)?.verdict;
      if (k.startsWith('member:') && verdict === 'rolled-back' && !order.includes(k.slice(7))) order.push(k.slice(7));
    }
  }
  return order;
}
