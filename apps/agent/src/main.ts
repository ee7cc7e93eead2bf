#!/usr/bin/env -S node --max-semi-space-size=1 --lite-mode
/**
 * The agent process (the shebang keeps V8 small: a 1 MiB young generation and no optimizing
 * compiler; the agent is I/O-bound and hashing is native). Configuration from the environment, enrollment when the device has no
 * identity yet, then the check-in loop until SIGINT/SIGTERM. Bad settings: one line, exit 2.
 * `svc-agent enroll [--token T] [--server-ca FILE] [--name NAME]` enrolls, pins the TUF root
 * and exits (the Debian package's svc-agent-enroll runs it with /etc/svc-agent/agent.env).
 *
 *   SVC_AGENT_SERVER        host:port of the device channel (SVC_DEVICE_ADDR)   127.0.0.1:8443
 *   SVC_AGENT_DATA_DIR      identity, journal, outbox, TUF metadata             ./.svc-agent
 *   SVC_AGENT_SERVER_CA     server CA PEM for the first enrollment (pinned afterwards)
 *   SVC_AGENT_ENROLL_TOKEN  enrollment token (needed only until enrolled)
 *   SVC_AGENT_DEVICE_NAME   device name (contracts §4)                            hostname
 *   SVC_AGENT_TUF_ROOT      provisioned TUF root.json (else fetched once after enrollment)
 *   SVC_RELEASE_*           spec §2.2 release settings (config.ts)
 *   SVC_AGENT_OS_BUNDLE     `rauc`: os-bundle members through the real rauc CLI (else none)
 *   SVC_AGENT_RAUC_CONF     rauc system.conf for `rauc info` (its keyring)       rauc default
 *   SVC_AGENT_REBOOT_COMMAND  JSON argv run to reboot after an os-bundle install  systemctl reboot
 *   SVC_AGENT_CONTAINER_RUNTIME  `docker` or `podman`: the CLI container members run through  docker
 *   SVC_AGENT_LOG_*         what a log bundle holds (channel/log-bundle.ts, docs/agent.md)
 *   SVC_AGENT_CONNECTION    `per-check-in` or `persistent` (channel/connection.ts)  per-check-in
 *   SVC_AGENT_IDLE_CLOSE_S  per-check-in: close after this long without a call   30
 */
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { IDENTIFIER_PATTERNS, decodePem, isDeviceName, parsePrivateKeyPem } from '@svc/release-core';
import type { Inventory } from '@svc/device-proto';
import { loadConfig, loadTrustKeys, type AgentConfig } from './config.js';
import { isAgentError } from './errors.js';
import { FilePlacementDriver } from './drivers/file-placement.js';
import { ContainerDriver } from './drivers/container.js';
import { containerRuntimeCli } from './drivers/container-runtime.js';
import { OsBundleDriver } from './drivers/os-bundle.js';
import { RaucSlotDriver } from './drivers/rauc.js';
import { Journal } from './journal/journal.js';
import { installedMembers } from './inventory/members.js';
import { InventoryReporter } from './inventory/reporter.js';
import { Orchestrator } from './transaction/orchestrator.js';
import { ChannelClients, deviceCredentials } from './channel/client.js';
import { loadIdentity, saveIdentity, type DeviceIdentityFiles } from './channel/identity.js';
import { AgentRuntime, type Log } from './channel/runtime.js';
import { ensureTrustedRoot } from './channel/trusted-root.js';
import { collectLogBundle, logBundleSettings } from './channel/log-bundle.js';

const AGENT_VERSION = '0.1.0';

const log: Log = (level, msg, fields = {}) => {
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`);
};

function fail(line: string): never {
  process.stderr.write(`svc-agent: ${line}\n`);
  process.exit(2);
}

const USAGE =
  'usage: svc-agent                  run (enrolls first when SVC_AGENT_ENROLL_TOKEN is set)\n       svc-agent enroll [--token T] [--server-ca FILE] [--name NAME]   enroll, pin the TUF root, exit';

/** `enroll` flags override SVC_AGENT_ENROLL_TOKEN, SVC_AGENT_SERVER_CA, SVC_AGENT_DEVICE_NAME. */
function enrollFlags(args: string[]): Record<string, string> {
  const names: Record<string, string> = { '--token': 'SVC_AGENT_ENROLL_TOKEN', '--server-ca': 'SVC_AGENT_SERVER_CA', '--name': 'SVC_AGENT_DEVICE_NAME' };
  const out: Record<string, string> = {};
  for (let i = 0; i < args.length; i += 2) {
    const name = names[args[i]!];
    if (name === undefined || args[i + 1] === undefined) fail(`${args[i]}: unknown or missing its value\n${USAGE}`);
    out[name] = args[i + 1]!;
  }
  return out;
}

/** Enrolls with SVC_AGENT_ENROLL_TOKEN, SVC_AGENT_SERVER_CA and SVC_AGENT_DEVICE_NAME; stores the identity. */
async function enrollDevice(env: NodeJS.ProcessEnv, config: AgentConfig, inventory: Inventory): Promise<DeviceIdentityFiles> {
  const token = env.SVC_AGENT_ENROLL_TOKEN ?? '';
  const caFile = env.SVC_AGENT_SERVER_CA ?? '';
  const deviceName = env.SVC_AGENT_DEVICE_NAME || hostname().toLowerCase();
  if (token === '') fail('SVC_AGENT_ENROLL_TOKEN: required until the device is enrolled');
  if (caFile === '') fail('SVC_AGENT_SERVER_CA: required for enrollment (the server CA PEM)');
  if (!isDeviceName(deviceName)) fail(`SVC_AGENT_DEVICE_NAME: must match ${IDENTIFIER_PATTERNS.deviceName.source}`);
  const bootstrapCaPem = await readFile(caFile, 'utf8').catch(() => fail(`SVC_AGENT_SERVER_CA: cannot read ${caFile}`));
  // @peculiar/x509 loads only here: an enrolled agent at rest never needs it
  const { enroll } = await import('./channel/enroll.js');
  const identity = await enroll({
    address: config.serverAddress,
    bootstrapCaPem,
    token,
    deviceName,
    inventory,
    onBusy: (waitMs) => log('warn', 'enrollment refused, server busy', { retry_ms: waitMs }),
  });
  await saveIdentity(config.dataDir, identity);
  log('info', 'enrolled', { device: identity.deviceName, tenant: identity.tenantId });
  return identity;
}

async function main(): Promise<void> {
  const [command, ...args] = process.argv.slice(2);
  if (command !== undefined && command !== 'enroll') fail(`unknown command ${JSON.stringify(command)}\n${USAGE}`);
  const env: NodeJS.ProcessEnv = command === 'enroll' ? { ...process.env, ...enrollFlags(args) } : process.env;
  let config;
  let logSettings;
  try {
    config = loadConfig(env);
    logSettings = logBundleSettings(env);
  } catch (e) {
    if (isAgentError(e)) fail(e.message);
    throw e;
  }
  let rebootCommand: string[] | undefined;
  if ((env.SVC_AGENT_REBOOT_COMMAND ?? '') !== '') {
    try {
      rebootCommand = JSON.parse(env.SVC_AGENT_REBOOT_COMMAND!) as string[];
    } catch {
      /* checked below */
    }
    if (!Array.isArray(rebootCommand) || rebootCommand.length === 0 || !rebootCommand.every((a) => typeof a === 'string')) {
      fail('SVC_AGENT_REBOOT_COMMAND: must be a JSON array of strings (argv)');
    }
  }
  const osBundle = env.SVC_AGENT_OS_BUNDLE ?? '';
  const containerRuntime = env.SVC_AGENT_CONTAINER_RUNTIME || 'docker';
  if (containerRuntime !== 'docker' && containerRuntime !== 'podman') fail('SVC_AGENT_CONTAINER_RUNTIME: must be "docker" or "podman"');
  if (osBundle !== '' && osBundle !== 'rauc') fail('SVC_AGENT_OS_BUNDLE: must be "rauc" or unset');
  const base = { agentVersion: AGENT_VERSION, profile: config.release?.profile ?? '', product: config.release?.product ?? '', slots: [] };
  // the journal opens after enrollment; until then no member is installed
  const opened: { journal?: Journal } = {};
  const reporter = new InventoryReporter({
    base,
    system: {
      agentVersion: AGENT_VERSION,
      stagingPath: config.dataDir,
      ...(osBundle === 'rauc' ? { rauc: () => new RaucSlotDriver(env.SVC_AGENT_RAUC_CONF ? { conf: env.SVC_AGENT_RAUC_CONF } : {}).status() } : {}),
    },
    customFile: env.SVC_AGENT_INVENTORY_FILE || undefined,
    members: () => (opened.journal === undefined ? [] : installedMembers(opened.journal.all())),
    log,
  });
  const inventory = await reporter.next();
  let identity = await loadIdentity(config.dataDir);
  if (command === 'enroll') {
    if (identity !== undefined) {
      process.stdout.write(`svc-agent: already enrolled as ${identity.deviceName} (tenant ${identity.tenantId}) in ${config.dataDir}\n`);
      return;
    }
    identity = await enrollDevice(env, config, inventory);
    const clients = new ChannelClients(config.serverAddress, deviceCredentials(identity));
    try {
      await ensureTrustedRoot(clients.repository, join(config.dataDir, 'tuf'), env.SVC_AGENT_TUF_ROOT || undefined);
    } finally {
      clients.close();
    }
    process.stdout.write(`svc-agent: enrolled as ${identity.deviceName} (tenant ${identity.tenantId}) in ${config.dataDir}\n`);
    return;
  }
  identity ??= await enrollDevice(env, config, inventory);
  const release = config.release === null ? null : { settings: config.release, trustedKeys: await loadTrustKeys(config.release.trustDir) };
  const journal = await Journal.open(join(config.dataDir, 'journal'));
  opened.journal = journal;
  const id = identity;
  // one object: a renewal swaps the certificate the receipts embed
  const device = { name: id.deviceName, certificateDer: decodePem(id.certPem, 'CERTIFICATE'), key: parsePrivateKeyPem(id.keyPem) };
  const runtime = new AgentRuntime({
    address: config.serverAddress,
    dataDir: config.dataDir,
    identity: id,
    inventory: reporter,
    connection: config.connection,
    log,
    onRenewed: (renewed) => {
      device.certificateDer = decodePem(renewed.certPem, 'CERTIFICATE');
    },
    collectLogs: (logRequest) => collectLogBundle(logSettings, { device: id.deviceName, logRequest }),
    onContact: () => journal.noteOnline(),
    makeOrchestrator: (fetcher) =>
      new Orchestrator({
        dataDir: config.dataDir,
        journal,
        release,
        fetcher,
        drivers: {
          model: new FilePlacementDriver({ kind: 'model', dataDir: config.dataDir }),
          config: new FilePlacementDriver({ kind: 'config', dataDir: config.dataDir }),
          'service-binary': new FilePlacementDriver({ kind: 'service-binary', dataDir: config.dataDir }),
          container: new ContainerDriver({ runtime: containerRuntimeCli(containerRuntime), archiveDir: join(config.dataDir, 'kept', 'container') }),
          ...(osBundle === 'rauc'
            ? {
                'os-bundle': new OsBundleDriver(
                  new RaucSlotDriver({ ...(env.SVC_AGENT_RAUC_CONF ? { conf: env.SVC_AGENT_RAUC_CONF } : {}), ...(rebootCommand ? { rebootCommand } : {}) }),
                  { stateFile: join(config.dataDir, 'os-digest') },
                ),
              }
            : {}),
        },
        device,
        maxResumptions: config.maxResumptions,
        downloadAttempts: config.downloadAttempts,
        log,
      }),
  });
  await runtime.withClients((c) => ensureTrustedRoot(c.repository, join(config.dataDir, 'tuf'), env.SVC_AGENT_TUF_ROOT || undefined));
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  log('info', 'running', { device: id.deviceName, server: config.serverAddress, connection: config.connection.mode });
  await runtime.run(stop.signal);
  log('info', 'stopped');
}

main().catch((e: unknown) => {
  process.stderr.write(`svc-agent: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
