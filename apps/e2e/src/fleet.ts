import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { startAgent, type AgentOptions } from './agent-process.js';
import { svcRelease } from './cli.js';
import { E2eError } from './errors.js';
import type { Proc } from './proc.js';
import { releasePayload, type PayloadOptions } from './release-payload.js';
import { Api, type GroupRecord, type ReleaseRecord, type RolloutRecord } from './rest-client.js';
import { startServer, type ServerOptions, type ServerProcess } from './server-process.js';
import { readTar, type TarEntry } from './tar.js';
import { waitFor, waitForProgress } from './wait.js';

export const ADMIN = { email: 'admin@e2e.test', password: 'e2e-admin-password' } as const;
export const PRODUCT = 'edge-gw';
export const PROFILE = 'linux-arm64';

export interface FleetOptions {
  /** A temp dir the fleet owns: server data (unless `server.dataDir`), customer keys, one dir per device. */
  root: string;
  devices: string[];
  server?: Partial<Pick<ServerOptions, 'dataDir' | 'databaseUrl' | 'schema' | 'echo' | 'env' | 'kekFile' | 'netns' | 'host' | 'httpPort' | 'devicePort'>>;
  /** Extra agent environment per device (crash hook, RAUC, ...). */
  agentEnv?: (name: string) => NodeJS.ProcessEnv;
  /** Crash tests: preload the crash hook into this device's agent (see AgentOptions.crashAt). */
  agentCrashAt?: (name: string) => AgentOptions['crashAt'];
  echo?: boolean;
  /** Called with one line per step of `Fleet.start` (the demo prints them). */
  narrate?: (line: string) => void;
}

export interface TransactionView {
  id: string;
  release_id: string;
  member_count: number;
  members: { rollout_id: string; component: string; group: number; position: number }[];
  state: string;
  [k: string]: unknown;
}

/**
 * One server process, an admin session, a customer release key made with `svc-release
 * keygen` and registered as authorizer, and one real agent process per device, each with
 * its own data dir and a trust dir holding only the customer's public key (spec §2.2).
 */
export class Fleet {
  readonly agents = new Map<string, Proc>();
  tenant = '';
  token = '';
  private constructor(
    readonly o: FleetOptions,
    readonly server: ServerProcess,
    readonly api: Api,
  ) {}

  static async start(o: FleetOptions): Promise<Fleet> {
    const say = o.narrate ?? (() => undefined);
    const server = await startServer({ dataDir: join(o.root, 'server'), admin: ADMIN, ...o.server, ...(o.echo ? { echo: true } : {}) });
    say(`server listening on ${server.url} (REST) and ${server.deviceAddr} (device channel, mTLS)`);
    const api = new Api(server.url);
    const fleet = new Fleet(o, server, api);
    try {
      await api.login(ADMIN.email, ADMIN.password);
      fleet.tenant = await api.tenantId();
      say(`logged in as ${ADMIN.email} (tenant ${fleet.tenant})`);
      const keyid = await fleet.customerKey();
      say(`customer release key generated with svc-release keygen and registered as authorizer (${keyid})`);
      fleet.token = await api.enrollToken('e2e', Math.max(1, o.devices.length));
      for (const name of o.devices) {
        await fleet.startAgent(name, { token: fleet.token });
        say(`device ${name} enrolled: real agent process, own data dir, trust dir pinning the customer key`);
      }
      await fleet.waitOnline(o.devices);
      return fleet;
    } catch (e) {
      await fleet.stop();
      throw e;
    }
  }

  get customerKeyPrefix(): string {
    return join(this.o.root, 'customer', 'release');
  }

  deviceDir(name: string): string {
    return join(this.o.root, 'devices', name);
  }

  /** The agent's data dir (SVC_AGENT_DATA_DIR); file placement defaults live under it. */
  dataDir(name: string): string {
    return join(this.deviceDir(name), 'data');
  }

  /** The tenant device CA as the device received it at enrollment (PEM file). */
  deviceCaFile(name: string): string {
    return join(this.dataDir(name), 'identity', 'device-ca.pem');
  }

  private async customerKey(): Promise<string> {
    await mkdir(join(this.o.root, 'customer'), { recursive: true });
    const kg = await svcRelease(['keygen', '--out', this.customerKeyPrefix]);
    if (kg.status !== 0) throw new E2eError('PROCESS_EXITED', `svc-release keygen exited ${kg.status}: ${kg.stderr.trim()}`);
    const pem = await readFile(`${this.customerKeyPrefix}.pub`, 'utf8');
    return (await this.api.json<{ keyid: string }>('POST', '/authorizer-keys', { name: 'customer-release', public_key_pem: pem }, 201)).keyid;
  }

  /** Starts (or restarts) a device's agent; the trust dir is provisioned on first start. */
  async startAgent(name: string, extra: Partial<AgentOptions> = {}): Promise<Proc> {
    const trustDir = join(this.deviceDir(name), 'trust');
    await mkdir(trustDir, { recursive: true });
    await writeFile(join(trustDir, 'customer.pem'), await readFile(`${this.customerKeyPrefix}.pub`));
    const proc = await startAgent({
      name,
      dataDir: this.dataDir(name),
      deviceAddr: this.server.deviceAddr,
      serverCaFile: this.server.serverCaFile,
      release: { tenant: this.tenant, product: PRODUCT, profile: PROFILE, trustDir },
      ...(this.o.echo ? { echo: true } : {}),
      ...(this.o.agentCrashAt?.(name) ? { crashAt: this.o.agentCrashAt(name)! } : {}),
      ...extra,
      env: { ...this.o.agentEnv?.(name), ...extra.env },
    });
    this.agents.set(name, proc);
    return proc;
  }

  async waitOnline(names: string[]): Promise<void> {
    await waitFor(
      `devices ${names.join(', ')} online`,
      async () => {
        const page = await this.api.get<{ devices: { name: string; status: string }[] }>(`/devices?limit=200`);
        return names.every((n) => page.devices.some((d) => d.name === n && d.status === 'online'));
      },
      30_000,
    );
  }

  createGroup(name: string, members: string[]): Promise<GroupRecord> {
    return this.api.json<GroupRecord>('POST', '/groups', { name, members }, 201);
  }

  /** Writes the payload, signs it with the real CLI, submits the exact envelope. */
  async signAndSubmit(p: Omit<PayloadOptions, 'tenant' | 'product'>): Promise<{ release: ReleaseRecord; envelopeFile: string; sign: string }> {
    const dir = join(this.o.root, 'releases', p.version);
    await mkdir(dir, { recursive: true });
    const payloadFile = join(dir, 'release.json');
    const envelopeFile = join(dir, 'release.dsse.json');
    await writeFile(payloadFile, JSON.stringify(releasePayload({ ...p, tenant: this.tenant, product: PRODUCT }), null, 2));
    const signed = await svcRelease(['sign', payloadFile, '--key', `${this.customerKeyPrefix}.key`, '--out', envelopeFile]);
    if (signed.status !== 0) throw new E2eError('PROCESS_EXITED', `svc-release sign exited ${signed.status}: ${signed.stderr.trim()}`);
    const envelope = JSON.parse(await readFile(envelopeFile, 'utf8')) as unknown;
    const release = await this.api.json<ReleaseRecord>('POST', '/releases', { envelope, expected_product: PRODUCT }, 201);
    return { release, envelopeFile, sign: signed.stdout };
  }

  startRollout(releaseId: string): Promise<RolloutRecord> {
    return this.api.json<RolloutRecord>('POST', '/rollouts', { release_id: releaseId }, 201);
  }

  /**
   * Waits until the transaction leaves `running` and returns it. Bound by progress: it fails
   * only after `idleMs` in which the transaction's view (its per-state device counts) did not
   * change, so a large fleet on a busy machine is waited for as long as devices keep reporting.
   */
  waitSettled(txId: string, idleMs = 60_000): Promise<TransactionView> {
    return waitForProgress<TransactionView>(
      `transaction ${txId} to settle`,
      async () => {
        const tx = await this.api.get<TransactionView>(`/release-transactions/${txId}`);
        return tx.state !== 'running' ? { done: tx } : { progress: tx };
      },
      idleMs,
      250,
    );
  }

  /** `GET /release-receipts/export` for one transaction, unpacked. */
  async exportReceipts(txId: string): Promise<{ receipts: Map<string, Buffer>; index: Record<string, unknown>[] }> {
    const res = await this.api.raw('GET', `/release-receipts/export?transaction_id=${txId}`, undefined, 200);
    const entries = readTar(Buffer.from(await res.arrayBuffer()));
    const receipts = new Map(entries.filter((e) => e.name.startsWith('receipts/')).map((e) => [e.name, e.bytes]));
    const indexEntry = entries.find((e) => e.name === 'index.jsonl');
    if (indexEntry === undefined) throw new E2eError('MALFORMED', 'receipt export has no index.jsonl');
    const index = indexEntry.bytes
      .toString('utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    return { receipts, index };
  }

  /** spec §4: `POST /devices/{name}/log-requests` (202); the request's id. */
  async requestLogs(device: string): Promise<{ id: string; status: string }> {
    return this.api.json<{ id: string; status: string }>('POST', `/devices/${device}/log-requests`, undefined, 202);
  }

  /** Waits until the device uploaded the bundle, then downloads it and unpacks the tar.gz. */
  async downloadLogs(device: string, id: string, timeoutMs = 30_000): Promise<{ bytes: Buffer; contentType: string; entries: TarEntry[] }> {
    await waitFor(
      `log request ${id} of ${device} to be uploaded`,
      async () => {
        const r = await this.api.get<{ status: string }>(`/devices/${device}/log-requests/${id}`);
        return r.status === 'uploaded' ? r : undefined;
      },
      timeoutMs,
      250,
    );
    const res = await this.api.raw('GET', `/devices/${device}/log-requests/${id}/download`, undefined, 200);
    const bytes = Buffer.from(await res.arrayBuffer());
    return { bytes, contentType: res.headers.get('content-type') ?? '', entries: readTar(gunzipSync(bytes)) };
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.agents.values()].map((a) => a.stop()));
    await this.server.stop();
  }
}
