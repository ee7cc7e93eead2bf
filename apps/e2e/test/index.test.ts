import { describe, expect, it } from 'vitest';
import * as e2e from '../src/index.js';

// the harness's public surface is what demo.mjs and the tests use; pin it.
describe('@svc/e2e public surface', () => {
  it('exports exactly these names', () => {
    expect(Object.keys(e2e).sort()).toEqual(
      [
        'ADMIN',
        'AGENT_MAIN',
        'Api',
        'CLI_BIN',
        'E2eError',
        'Fleet',
        'PRODUCT',
        'PROFILE',
        'Proc',
        'REPO_ROOT',
        'SERVER_MAIN',
        'SIM_MAIN',
        'HAPROXY',
        'PGLITE_CLUSTER_ENV',
        'IP',
        'LinkProxy',
        'createHostNetwork',
        'deploymentHaproxyConfig',
        'freePort',
        'haproxyStats',
        'makePgliteCluster',
        'netnsUnavailable',
        'removeStaleNetworks',
        'startHaproxyConfig',
        'readTar',
        'releasePayload',
        'startAgent',
        'startHaproxy',
        'startServer',
        'startSim',
        'svcRelease',
        'waitFor',
        'waitForProgress',
      ].sort(),
    );
  });

  it('readTar refuses a garbled header instead of reading it as empty', () => {
    const header = Buffer.alloc(1024);
    header.write('index.jsonl', 0);
    header.write('0000644\0', 100);
    header.write('00000000000\0', 124);
    header.write('0000000\0', 148); // wrong checksum
    expect(() => e2e.readTar(header)).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
  });
});
