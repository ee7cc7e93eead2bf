import { describe, expect, it } from 'vitest';
import * as agent from '../src/index.js';

// The public surface is explicit; changing it is a deliberate act. Test doubles
// (test/helpers/fake-*.ts) are not part of it: the shipped agent never loads them.
describe('@svc/agent public surface', () => {
  it('exports exactly these runtime names', () => {
    expect(Object.keys(agent).sort()).toEqual(
      [
        'ACTIVATION_PHASE', 'AGENT_ERROR_CODES', 'AgentError', 'CRASH_POINTS', 'CRASH_POINT_CHANNEL', 'ContainerDriver', 'EVENTS',
        'FilePlacementDriver', 'JOURNAL_VERSION', 'Journal', 'MAX_ENVELOPE_BYTES', 'MAX_MEMBERS', 'MEMBER_KINDS', 'OsBundleDriver',
        'Orchestrator', 'Outbox', 'RECOVERY', 'RELEASE_SETTING_NAMES', 'RESUME_ACTIONS', 'RaucSlotDriver', 'STATES', 'TERMINAL_OUTCOMES',
        'TRANSITIONS', 'assertAssignment', 'buildReceipt', 'classifyFailure', 'containerRuntimeCli', 'countsAsResumption', 'decideFailure',
        'downloadMember', 'fileDigest', 'freeBytesOf', 'isAgentError', 'isState', 'loadConfig', 'loadTrustKeys', 'nextState', 'nodeJournalIo',
        'parseHealthPolicy', 'parseLoadedImage', 'planMembers', 'probeHealthChecker', 'probesForGroup', 'runCommand', 'runHealth', 'runProbe',
        'stagedPath', 'writeFileAtomic',
      ].sort(),
    );
  });

  it('no shipped module is a test double', async () => {
    const { readdir } = await import('node:fs/promises');
    const src = new URL('../src/', import.meta.url);
    const files = (await readdir(src, { recursive: true })).filter((f) => f.endsWith('.ts'));
    expect(files.filter((f) => /(^|\/)fake[^/]*\.ts$/.test(f))).toEqual([]);
  });
});
