import { describe, expect, it } from 'vitest';
import * as agent from '../src/index.js';

// STYLE 2: the public surface is explicit; changing it is a deliberate act.
describe('@svc/agent public surface', () => {
  it('exports exactly these runtime names', () => {
    expect(Object.keys(agent).sort()).toEqual(
      [
        'AGENT_ERROR_CODES', 'AgentError', 'ContainerDriver', 'EVENTS', 'FakeMemberDriver', 'FakeSlotDriver', 'FilePlacementDriver',
        'JOURNAL_VERSION', 'Journal', 'OsBundleDriver', 'Orchestrator', 'Outbox',
        'RECOVERY', 'RELEASE_SETTING_NAMES', 'RaucSlotDriver', 'STATES', 'TERMINAL_OUTCOMES', 'TRANSITIONS', 'assertAssignment',
        'buildReceipt', 'classifyFailure', 'containerRuntimeCli', 'countsAsResumption', 'decideFailure', 'downloadMember', 'fileDigest',
        'freeBytesOf', 'isAgentError', 'isState', 'loadConfig', 'loadTrustKeys', 'nextState', 'nodeJournalIo', 'parseHealthPolicy',
        'parseLoadedImage', 'planMembers', 'probeHealthChecker', 'runCommand', 'runHealth', 'runProbe', 'stagedPath', 'writeFileAtomic',
      ].sort(),
    );
  });
});
