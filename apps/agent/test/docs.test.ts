import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CRASH_POINTS, RECOVERY, RESUME_ACTIONS } from '../src/index.js';

const DOC = resolve(import.meta.dirname, '../../../docs/agent.md');
const HEADER = '| crash point | where | journaled state | after a restart |';

/** The rows docs/agent.md must show, one per crash point, in table order. */
function crashPointRows(): string[] {
  return Object.entries(CRASH_POINTS).map(([point, spec]) => {
    const actions = [...new Set(spec.states.map((s) => RECOVERY[s]))];
    const after = actions.map((a) => `\`${a}\`: ${RESUME_ACTIONS[a].does}`).join('; ');
    return `| \`${point}\` | ${spec.at} | ${spec.states.map((s) => `\`${s}\``).join(', ')} | ${after} |`;
  });
}

describe('docs/agent.md', () => {
  it('lists every crash point with what the agent does after it, exactly as the tables in code say', async () => {
    const lines = (await readFile(DOC, 'utf8')).split('\n');
    const start = lines.indexOf(HEADER);
    expect(start, `docs/agent.md has no table headed ${HEADER}`).toBeGreaterThan(0);
    const end = lines.findIndex((l, i) => i > start && !l.startsWith('|'));
    expect(lines.slice(start + 2, end)).toEqual(crashPointRows());
  });
});
