import { pathToFileURL } from 'node:url';
import { Proc } from './proc.js';
import { AGENT_MAIN, CRASH_HOOK } from './paths.js';

export interface AgentOptions {
  /** SVC_AGENT_DEVICE_NAME (contracts §4). */
  name: string;
  /** SVC_AGENT_DATA_DIR: identity, journal, staging, outbox, TUF metadata. */
  dataDir: string;
  /** SVC_AGENT_SERVER: the server's device channel. */
  deviceAddr: string;
  /** SVC_AGENT_SERVER_CA: the server CA PEM file (needed until enrolled). */
  serverCaFile: string;
  /** SVC_AGENT_ENROLL_TOKEN (needed until enrolled). */
  token?: string;
  /** The four spec §2.2 settings; absent = none (release pointers fail closed). */
  release?: { tenant: string; product: string; profile: string; trustDir: string };
  /** Anything else (SVC_AGENT_OS_BUNDLE, DBUS_SYSTEM_BUS_ADDRESS, ...). */
  env?: NodeJS.ProcessEnv;
  /**
   * Crash tables only: preload the e2e crash hook, which SIGKILLs the agent at this crash
   * point (apps/agent CRASH_POINTS) after writing `{point, tx, state}` to `record`.
   */
  crashAt?: { point: string; record: string };
  /** A network namespace (`ip netns`) to run in. */
  netns?: string;
  echo?: boolean;
}

/**
 * `node apps/agent/dist/main.js` (with the same small-V8 flags as its shebang). Ready once it
 * logged `running` (enrolled, TUF root pinned, check-in loop started).
 */
export async function startAgent(o: AgentOptions): Promise<Proc> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    SVC_AGENT_DEVICE_NAME: o.name,
    SVC_AGENT_DATA_DIR: o.dataDir,
    SVC_AGENT_SERVER: o.deviceAddr,
    SVC_AGENT_SERVER_CA: o.serverCaFile,
    ...(o.token ? { SVC_AGENT_ENROLL_TOKEN: o.token } : {}),
    ...(o.release
      ? {
          SVC_RELEASE_TENANT: o.release.tenant,
          SVC_RELEASE_PRODUCT: o.release.product,
          SVC_RELEASE_PROFILE: o.release.profile,
          SVC_RELEASE_TRUST_DIR: o.release.trustDir,
        }
      : {}),
    ...o.env,
    ...(o.crashAt ? { SVC_E2E_CRASH_AT: o.crashAt.point, SVC_E2E_CRASH_RECORD: o.crashAt.record } : {}),
  };
  const execArgv = ['--max-semi-space-size=1', '--lite-mode', ...(o.crashAt ? ['--import', pathToFileURL(CRASH_HOOK).href] : [])];
  const proc = new Proc(`agent ${o.name}`, AGENT_MAIN, [], env, { execArgv, echo: o.echo ?? false, ...(o.netns === undefined ? {} : { netns: o.netns }) });
  try {
    await proc.waitForLine(/"msg":"running"/, 60_000);
  } catch (e) {
    await proc.kill();
    throw e;
  }
  return proc;
}
