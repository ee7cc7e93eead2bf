import { execFileSync } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, Fleet, startAgent, waitFor, type Proc } from '../src/index.js';
import { tempDir } from '@svc/test-kit';
import { requireTool } from './helpers/tools.js';

/**
 * Certificate renewal with real processes across the renewal. Device certificates live 30
 * days and the server asks for renewal 10 days before the end, so the server and the agents
 * run on one shared clock that the test moves forward: libfaketime preloaded into every
 * process, reading its offset from a file (FAKETIME_TIMESTAMP_FILE), re-read every second.
 * Monotonic clocks are left alone, so timers and timeouts behave.
 */
const hasFaketime = requireTool('faketime');
const libfaketime = hasFaketime
  ? execFileSync('dpkg', ['-L', 'libfaketime'], { encoding: 'utf8' })
      .split('\n')
      .find((l) => l.endsWith('/libfaketimeMT.so.1'))
  : undefined;

const A = 'renew-a'; // renews, then its old certificate is tried
const B = 'renew-b'; // stopped after enrolling: its certificate expires
const C = 'renew-c'; // killed between receiving the renewed certificate and storing it

const fingerprint = (pem: string) => `sha256:${createHash('sha256').update(new X509Certificate(pem).raw).digest('hex')}`;

describe.skipIf(!hasFaketime)('certificate renewal with a real agent process', () => {
  let root: Awaited<ReturnType<typeof tempDir>>;
  let fleet: Fleet;
  let clockFile: string;
  let crashC = true;
  const oldPem = new Map<string, string>();

  const devicePem = (name: string) => readFile(join(fleet.dataDir(name), 'identity', 'device.pem'), 'utf8');
  const serverFingerprint = async (name: string) => (await fleet.api.get<{ cert_fingerprint: string | null }>(`/devices/${name}`)).cert_fingerprint;
  /** Moves every process's wall clock `days` ahead of the real one; the admin session is re-opened at the new time. */
  async function setClock(days: number): Promise<void> {
    await writeFile(clockFile, `+${days}d\n`);
    // libfaketime re-reads the file about once a second, in each process on its own: wait
    // until the server's HTTP Date header shows the new time, then log in again (a session
    // opened before the server's clock moved has expired by the time it did)
    const target = Date.now() + days * 86_400_000 - 60_000;
    await waitFor(
      `the server's clock to move ${days} days ahead`,
      async () => {
        const res = await fetch(`${fleet.server.url}/api/v1/auth/me`);
        return Date.parse(res.headers.get('date') ?? '') >= target;
      },
      20_000,
      250,
    );
    await fleet.api.login(ADMIN.email, ADMIN.password);
  }

  beforeAll(async () => {
    root = await tempDir('e2e-renewal');
    clockFile = join(root.dir, 'clock');
    await writeFile(clockFile, '+0\n');
    const clock = { LD_PRELOAD: libfaketime!, FAKETIME_TIMESTAMP_FILE: clockFile, FAKETIME_CACHE_DURATION: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1' };
    fleet = await Fleet.start({
      root: root.dir,
      devices: [A, B, C],
      server: { env: clock },
      agentEnv: () => clock,
      agentCrashAt: (name) => (name === C && crashC ? { point: 'renewal-received', record: join(root.dir, 'c-crash.json') } : undefined),
    });
    await fleet.agents.get(B)!.stop();
    for (const name of [A, B, C]) oldPem.set(name, await devicePem(name));
    // A's identity as it is now, to try the superseded certificate later
    await cp(fleet.dataDir(A), join(root.dir, 'a-before-renewal'), { recursive: true });
  });

  afterAll(async () => {
    await fleet?.stop();
    await root?.cleanup();
  });

  it('renews 25 days on; the next call carries the new certificate, and the old one is refused from then on', async () => {
    expect(await serverFingerprint(A)).toBe(fingerprint(oldPem.get(A)!));
    const agent = fleet.agents.get(A)!;
    const from = agent.lines.length;
    await setClock(25);
    await agent.waitForLine(/"msg":"certificate renewed"/, 30_000, from);
    const renewed = await devicePem(A);
    expect(renewed).not.toBe(oldPem.get(A));
    const cert = new X509Certificate(renewed);
    expect(cert.subject).toBe(`CN=${A}`);
    expect(new Date(cert.validTo).getTime() - new Date(new X509Certificate(oldPem.get(A)!).validTo).getTime()).toBeGreaterThan(24 * 86_400_000);
    // the server makes a renewed certificate current at its first use: the next check-in
    await waitFor(`${A} to present its renewed certificate`, async () => (await serverFingerprint(A)) === fingerprint(renewed));
    const later = agent.lines.length;
    await new Promise((r) => setTimeout(r, 2500));
    expect(agent.lines.slice(later).filter((l) => l.includes('check-in failed'))).toEqual([]);

    // the same device with its certificate from before the renewal: refused
    const stale: Proc = await startAgent({
      name: A,
      dataDir: join(root.dir, 'a-before-renewal'),
      deviceAddr: fleet.server.deviceAddr,
      serverCaFile: fleet.server.serverCaFile,
      env: fleet.o.agentEnv!(A),
    });
    try {
      const line = await stale.waitForLine(/"msg":"check-in failed"/, 30_000);
      expect(line.input).toContain('"code":"PERMISSION_DENIED"');
      expect(line.input).toContain(`device ${A}: certificate revoked or superseded`);
    } finally {
      await stale.kill();
    }
  });

  it('a renewal interrupted by a crash before the certificate was stored recovers on the next start', async () => {
    const first = fleet.agents.get(C)!;
    await setClock(25); // as the previous test left it
    // C asked for its certificate and was killed holding it
    expect(await waitFor(`${C} to be killed mid-renewal`, () => (first.running ? undefined : first.exited), 30_000)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await devicePem(C)).toBe(oldPem.get(C));
    expect(await serverFingerprint(C)).toBe(fingerprint(oldPem.get(C)!));
    crashC = false;
    const again = await fleet.startAgent(C);
    await again.waitForLine(/"msg":"certificate renewed"/, 30_000);
    const renewed = await devicePem(C);
    expect(renewed).not.toBe(oldPem.get(C));
    await waitFor(`${C} to present its renewed certificate`, async () => (await serverFingerprint(C)) === fingerprint(renewed));
  });

  it('an expired certificate is refused; a renewed one keeps working', async () => {
    await setClock(44);
    const b = await fleet.startAgent(B);
    const line = await b.waitForLine(/"msg":"check-in failed"/, 30_000);
    expect(line.input).toContain('"code":"UNAUTHENTICATED"');
    expect(line.input).toContain('client certificate: missing, expired, or not issued by a device CA');
    // A's renewed certificate is good until day 55: an authenticated call still succeeds
    const req = await fleet.requestLogs(A);
    const { entries } = await fleet.downloadLogs(A, req.id);
    expect(entries[0]!.name).toBe('manifest.json');
  });
});
