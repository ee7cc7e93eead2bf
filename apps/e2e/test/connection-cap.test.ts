import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_MAIN, Fleet, Proc } from '../src/index.js';
import { tempDir } from '@svc/test-kit';

/**
 * The server's connection cap with real processes: a server admitting one device connection
 * (SVC_DEVICE_MAX_CONNECTIONS=1, SVC_DEVICE_RETRY_AFTER_S=1), agent A in persistent mode holding
 * it. Agent B's enrollment is refused with RESOURCE_EXHAUSTED and retry-after-ms, and B waits it
 * out instead of exiting; once A stops, B enrolls, runs and comes online (per-check-in mode).
 */
const A = 'cap-a';
const B = 'cap-b';

describe('device connection cap, real server and agent processes', () => {
  let root: { dir: string; cleanup: () => Promise<void> };
  let fleet: Fleet;
  let b: Proc | undefined;
  beforeAll(async () => {
    root = await tempDir('e2e-connection-cap');
    fleet = await Fleet.start({
      root: root.dir,
      devices: [A],
      server: { env: { SVC_DEVICE_MAX_CONNECTIONS: '1', SVC_DEVICE_RETRY_AFTER_S: '1' } },
      agentEnv: () => ({ SVC_AGENT_CONNECTION: 'persistent' }),
    });
  });
  afterAll(async () => {
    await b?.stop();
    await fleet?.stop();
    await root?.cleanup();
  });

  it('refuses the second device while the first holds the only connection; it backs off and gets in once the first left', async () => {
    const token = await fleet.api.enrollToken('cap-b', 1);
    // as apps/e2e startAgent, but without waiting for `running`: B cannot get there yet
    b = new Proc(
      `agent ${B}`,
      AGENT_MAIN,
      [],
      {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        SVC_AGENT_DEVICE_NAME: B,
        SVC_AGENT_DATA_DIR: join(fleet.deviceDir(B), 'data'),
        SVC_AGENT_SERVER: fleet.server.deviceAddr,
        SVC_AGENT_SERVER_CA: fleet.server.serverCaFile,
        SVC_AGENT_ENROLL_TOKEN: token,
        SVC_AGENT_CONNECTION: 'per-check-in',
        SVC_AGENT_IDLE_CLOSE_S: '1',
      },
      { execArgv: ['--max-semi-space-size=1', '--lite-mode'] },
    );
    const refused = await b.waitForLine(/"msg":"enrollment refused, server busy".*"retry_ms":(\d+)/, 60_000);
    expect(Number(refused[1])).toBeGreaterThanOrEqual(1000);
    // the token was not spent on the refusal: B is not a device yet
    const before = await fleet.api.get<{ devices: { name: string }[] }>('/devices?limit=200');
    expect(before.devices.map((d) => d.name)).toEqual([A]);
    expect(b.running).toBe(true);

    await fleet.agents.get(A)!.stop();
    await b.waitForLine(/"msg":"running"/, 90_000);
    await fleet.waitOnline([B]);
  }, 240_000);
});
