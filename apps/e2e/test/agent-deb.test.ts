import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync } from 'node:fs';
import { copyFile, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, PRODUCT, PROFILE, Proc, REPO_ROOT, svcRelease } from '../src/index.js';
import { readJournal } from './helpers/journal.js';
import { tempDir } from '@svc/test-kit';
import { requireTool } from './helpers/tools.js';

/**
 * The agent's Debian package as a device gets it: built by scripts/build-agent-deb.sh,
 * installed with `dpkg -i` on this machine, enrolled with svc-agent-enroll, the installed
 * /usr/bin/svc-agent started with /etc/svc-agent/agent.env as systemd would pass it (no
 * systemd needed), a signed update taken, then `dpkg -r` (state dir kept) and `dpkg -P`.
 * Needs root (dpkg -i); skips loudly otherwise, except under CI=true.
 */
const isRoot = process.getuid?.() === 0;
if (!isRoot && process.env['CI'] !== 'true') console.warn('SKIPPING: the Debian package test installs with dpkg -i; run it as root');
const ready = (isRoot || process.env['CI'] === 'true') && requireTool('dpkg-deb', 'dpkg');

const STATE = '/var/lib/svc-agent';
const ENV_FILE = '/etc/svc-agent/agent.env';
/** Written after our install: a leftover from an interrupted run of this test may be purged. */
const MARKER = join(STATE, '.svc-e2e-installed');
const DEVICE = 'deb-gw';

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): { code: number | null; out: string; err: string } {
  const r = spawnSync(cmd, args, { env, encoding: 'utf8', timeout: 300_000 });
  return { code: r.status, out: r.stdout ?? '', err: r.stderr ?? '' };
}

function installedStatus(): string {
  return run('dpkg-query', ['-W', '-f=${Status}', 'svc-agent']).out;
}

/** KEY=VALUE lines as systemd's EnvironmentFile reads them (comments and blanks skipped). */
function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

function setEnv(text: string, values: Record<string, string>): string {
  return text
    .split('\n')
    .map((line) => {
      const m = /^([A-Z_][A-Z0-9_]*)=/.exec(line);
      return m && m[1]! in values ? `${m[1]}=${values[m[1]!]}` : line;
    })
    .join('\n');
}

describe.skipIf(!ready)('the agent Debian package', () => {
  let root: Awaited<ReturnType<typeof tempDir>>;
  let fleet: Fleet;
  let deb: string;
  let agent: Proc | undefined;

  beforeAll(async () => {
    if (installedStatus() !== '') {
      if (!existsSync(MARKER)) throw new Error('svc-agent is installed on this machine and not by this test: refusing to replace it');
      run('dpkg', ['--purge', 'svc-agent']);
    }
    root = await tempDir('e2e-deb');
    const built = run('bash', [join(REPO_ROOT, 'scripts', 'build-agent-deb.sh'), join(root.dir, 'deb')]);
    if (built.code !== 0) throw new Error(`build-agent-deb.sh exited ${built.code}:\n${built.err}`);
    deb = built.out.trim().split('\n').pop()!;
    fleet = await Fleet.start({ root: root.dir, devices: [] });
  }, 600_000);

  afterAll(async () => {
    await agent?.stop();
    await fleet?.stop();
    if (existsSync(MARKER) || installedStatus().includes('config-files')) run('dpkg', ['--purge', 'svc-agent']);
    await root?.cleanup();
  });

  it('is Architecture all, depends on nodejs >= 20 and ships one bundled agent file', () => {
    const fields = run('dpkg-deb', ['--field', deb, 'Package', 'Architecture', 'Depends']).out;
    expect(fields).toBe('Package: svc-agent\nArchitecture: all\nDepends: nodejs (>= 20)\n');
    const files = run('dpkg-deb', ['--contents', deb]).out;
    for (const f of [
      './usr/lib/svc-agent/svc-agent.mjs',
      './usr/sbin/svc-agent-enroll',
      './lib/systemd/system/svc-agent.service',
      './etc/svc-agent/agent.env',
    ]) {
      expect(files).toContain(f);
    }
    expect(files).toMatch(/\.\/usr\/bin\/svc-agent -> \.\.\/lib\/svc-agent\/svc-agent\.mjs/);
    expect(files).not.toContain('node_modules');
    expect(run('dpkg-deb', ['--info', deb, 'conffiles']).out).toBe('/etc/svc-agent/agent.env\n');
  });

  it('installs, enrolls, runs the installed binary, takes a signed update; dpkg -r keeps the state dir', async () => {
    const installed = run('dpkg', ['-i', deb]);
    expect(installed.code, installed.err).toBe(0);
    await writeFile(MARKER, '');
    expect(installedStatus()).toBe('install ok installed');
    expect(lstatSync('/usr/bin/svc-agent').isSymbolicLink()).toBe(true);
    expect((await stat(STATE)).mode & 0o777).toBe(0o700);

    const unit = await readFile('/lib/systemd/system/svc-agent.service', 'utf8');
    for (const line of [
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      `ReadWritePaths=${STATE}`,
      'Restart=on-failure',
      `EnvironmentFile=${ENV_FILE}`,
      'ExecStart=/usr/bin/svc-agent',
    ]) {
      expect(unit.split('\n')).toContain(line);
    }
    expect(unit.split('\n').filter((l) => l.startsWith('ReadWritePaths='))).toEqual([`ReadWritePaths=${STATE}`]);
    if (requireTool('systemd-analyze', 'systemd')) {
      const verified = run('systemd-analyze', ['verify', '/lib/systemd/system/svc-agent.service']);
      expect(verified.code, verified.err).toBe(0);
    }
    const shipped = parseEnvFile(await readFile(ENV_FILE, 'utf8'));
    expect(
      Object.keys(shipped)
        .filter((k) => k.startsWith('SVC_RELEASE_'))
        .sort(),
    ).toEqual(['SVC_RELEASE_PRODUCT', 'SVC_RELEASE_PROFILE', 'SVC_RELEASE_TENANT', 'SVC_RELEASE_TRUST_DIR']);

    // provision the device: the service address, the four release settings, the customer key
    await copyFile(`${fleet.customerKeyPrefix}.pub`, '/etc/svc-agent/trust.d/customer.pem');
    await writeFile(
      ENV_FILE,
      setEnv(await readFile(ENV_FILE, 'utf8'), {
        SVC_AGENT_SERVER: fleet.server.deviceAddr,
        SVC_RELEASE_TENANT: fleet.tenant,
        SVC_RELEASE_PRODUCT: PRODUCT,
        SVC_RELEASE_PROFILE: PROFILE,
        SVC_RELEASE_TRUST_DIR: '/etc/svc-agent/trust.d',
      }),
    );
    const base = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/root' };
    const enrolled = run('/usr/sbin/svc-agent-enroll', ['--token', fleet.token, '--server-ca', fleet.server.serverCaFile, '--name', DEVICE], base);
    expect(enrolled.code, enrolled.err).toBe(0);
    expect(enrolled.out).toMatch(new RegExp(`^svc-agent: enrolled as ${DEVICE} \\(tenant ${fleet.tenant}\\) in ${STATE}\\n$`));
    expect(existsSync(join(STATE, 'identity', 'identity.json'))).toBe(true);
    expect(existsSync(join(STATE, 'tuf', 'root.json'))).toBe(true);
    expect(run('/usr/sbin/svc-agent-enroll', ['--token', 'spent'], base).out).toMatch(/^svc-agent: already enrolled as deb-gw/);

    // what systemd would start: ExecStart with the EnvironmentFile
    agent = new Proc('svc-agent (deb)', '/usr/bin/svc-agent', [], { ...base, ...parseEnvFile(await readFile(ENV_FILE, 'utf8')) }, { exec: true });
    await agent.waitForLine(/"msg":"running"/, 60_000);
    await fleet.waitOnline([DEVICE]);

    const bytes = Buffer.from('uplink = "telemetry.example"\n');
    const config = await fleet.api.uploadArtifact({ name: 'gw-config', version: '1.0.0', kind: 'config', filename: 'gateway.toml', bytes });
    const group = await fleet.createGroup('deb-devices', [DEVICE]);
    const placed = join(STATE, 'etc', 'gateway.toml');
    const { release } = await fleet.signAndSubmit({
      version: '1.0.0',
      components: [{ name: 'gw-config', artifact: config, placement: { path: placed, mode: '0640', owner: 'root', group: 'root' } }],
      orderedGroups: [['gw-config']],
      group,
      probes: [{ name: 'placed', type: 'command', command: ['/bin/sh', '-c', `test -s ${placed}`], timeout_s: 10 }],
    });
    const rollout = await fleet.startRollout(release.id);
    const tx = await fleet.waitSettled(rollout.transaction_id!);
    expect(tx.state).toBe('committed');
    expect(await readFile(placed)).toEqual(bytes);
    expect((await stat(placed)).mode & 0o777).toBe(0o640);
    const { index, receipts } = await fleet.exportReceipts(tx.id);
    expect(index.map((l) => l.device)).toEqual([DEVICE]);
    const receiptFile = join(root.dir, 'receipt.json');
    await writeFile(receiptFile, receipts.get(index[0]!.file as string)!);
    const verified = await svcRelease([
      'verify-receipt',
      receiptFile,
      '--ca',
      join(STATE, 'identity', 'device-ca.pem'),
      '--tenant',
      fleet.tenant,
      '--device',
      DEVICE,
    ]);
    expect(verified.status, verified.stderr).toBe(0);
    // the check-in that handed over the release is the offline-age contact
    expect((await readJournal(STATE)).some((l) => l.kind === 'online')).toBe(true);

    await agent.stop();
    const removed = run('dpkg', ['-r', 'svc-agent']);
    expect(removed.code, removed.err).toBe(0);
    expect(installedStatus()).toBe('deinstall ok config-files');
    for (const gone of ['/usr/lib/svc-agent/svc-agent.mjs', '/usr/bin/svc-agent', '/usr/sbin/svc-agent-enroll', '/lib/systemd/system/svc-agent.service'])
      expect(existsSync(gone)).toBe(false);
    // the state dir stays: identity, journal, placed files
    expect(existsSync(join(STATE, 'identity', 'device.key'))).toBe(true);
    expect(existsSync(join(STATE, 'journal', 'journal.jsonl'))).toBe(true);
    expect(await readFile(placed)).toEqual(bytes);
    expect(existsSync(ENV_FILE)).toBe(true);

    const purged = run('dpkg', ['--purge', 'svc-agent']);
    expect(purged.code, purged.err).toBe(0);
    expect(installedStatus()).toBe('');
    expect(existsSync(STATE)).toBe(false);
    expect(existsSync('/etc/svc-agent')).toBe(false);
  });
});
