import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as agent from '../src/index.js';

const SRC = join(import.meta.dirname, '..', 'src');

// The public surface is explicit; changing it is a deliberate act. Test doubles
// (test/helpers/fake-*.ts) are not part of it: the shipped agent never loads them.
describe('@svc/agent public surface', () => {
  it('exports exactly these runtime names', () => {
    expect(Object.keys(agent).sort()).toEqual(
      [
        'ACTIVATION_PHASE',
        'AGENT_ERROR_CODES',
        'AgentError',
        'CRASH_POINTS',
        'CRASH_POINT_CHANNEL',
        'ContainerDriver',
        'DOWNLOAD',
        'EVENTS',
        'FilePlacementDriver',
        'JOURNAL_VERSION',
        'Journal',
        'OsBundleDriver',
        'Orchestrator',
        'Outbox',
        'RECOVERY',
        'RELEASE_SETTING_NAMES',
        'RESUME_ACTIONS',
        'RaucSlotDriver',
        'STATES',
        'TERMINAL_OUTCOMES',
        'TRANSITIONS',
        'assertAssignment',
        'buildReceipt',
        'classifyFailure',
        'containerRuntimeCli',
        'countsAsResumption',
        'decideFailure',
        'downloadBackoffMs',
        'downloadMember',
        'fileDigest',
        'freeBytesOf',
        'isAgentError',
        'isState',
        'loadConfig',
        'loadTrustKeys',
        'nextState',
        'nodeJournalIo',
        'parseHealthPolicy',
        'parseLoadedImage',
        'planMembers',
        'probeHealthChecker',
        'probesForGroup',
        'runCommand',
        'runHealth',
        'runProbe',
        'stagedPath',
        'writeFileAtomic',
      ].sort(),
    );
  });

  it('no shipped module is a test double', async () => {
    const files = (await readdir(SRC, { recursive: true })).filter((f) => f.endsWith('.ts'));
    expect(files.filter((f) => /(^|\/)fake[^/]*\.ts$/.test(f))).toEqual([]);
  });

  it('the shipped agent has no crash switch: nothing in src listens to crash points, reads a crash setting or kills itself', async () => {
    const files = (await readdir(SRC, { recursive: true })).filter((f) => f.endsWith('.ts'));
    for (const f of files) {
      const text = await readFile(join(SRC, f), 'utf8');
      expect(text, f).not.toMatch(/\bsubscribe\s*\(|\.subscribe\b/);
      expect(text, f).not.toMatch(/CRASH_AT/);
      expect(text, f).not.toMatch(/process\.kill\(\s*process\.pid/);
    }
  });
});
