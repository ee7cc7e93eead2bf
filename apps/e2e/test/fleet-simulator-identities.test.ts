import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, Proc, SIM_MAIN, startSim, type SimProcess } from '../src/index.js';
import { freshSchema, stores } from './helpers/postgres.js';
import { makeCa, tempDir } from '@svc/test-kit';
import { requireTool } from './helpers/tools.js';

/**
 * The simulator's bulk enrollment and identity cache against a server process, over the real
 * enrollment call and mTLS check-ins on loopback:
 * - N devices enroll with every Enroll call in flight at once over two shared connections
 *   (keys and CSRs through node:crypto), then check in per-check-in; the identities are
 *   written to the cache (0600) and cost well under a KiB each in the arena;
 * - a second run with the same cache starts at once: nothing is enrolled (its token is used
 *   up), every device checks in with its cached identity; a larger run enrolls only the rest;
 * - a cache is refused, naming why, when the run's --server-ca or --prefix differ, and when the
 *   server no longer recognises its devices (decommissioned here; another database or schema
 *   behind the same CA looks the same).
 */
const N = 50;
const havePsql = !process.env.SVC_TEST_DATABASE_URL || requireTool('psql', 'postgresql-client');
const haveOpenssl = requireTool('openssl', 'openssl');

describe.each(stores().filter((s) => s === 'embedded' || havePsql))('simulator bulk enrollment and identity cache (%s store)', (store) => {
  let root: { dir: string; cleanup: () => Promise<void> };
  let fleet: Fleet;
  let sim: SimProcess | undefined;
  let drop = () => undefined as void;
  const cacheFile = () => join(root.dir, 'identities.bin');
  beforeAll(async () => {
    root = await tempDir('e2e-sim-ids');
    let server = {};
    if (store === 'postgres') {
      const s = freshSchema();
      drop = s.drop;
      server = { databaseUrl: s.url, schema: s.schema };
    }
    fleet = await Fleet.start({ root: root.dir, devices: [], server });
  });
  afterAll(async () => {
    await sim?.proc.kill();
    await fleet?.stop();
    drop();
    await root?.cleanup();
  });

  const run = async (o: { token: string; devices: number }) => {
    sim = await startSim({
      deviceAddr: fleet.server.deviceAddr,
      serverCaFile: fleet.server.serverCaFile,
      token: o.token,
      devices: o.devices,
      prefix: 'bulk',
      intervalS: 1,
      concurrency: N,
      enrollLanes: 2,
      connection: 'per-check-in',
      identities: cacheFile(),
    });
    return sim;
  };

  /** Runs until every device of `s` checked in at least once over its own connection, then stops cleanly. */
  const checkInAll = async (s: SimProcess, devices: number) => {
    await s.waitForEvent(`a stats line counting ${devices} check-ins`, (e) => e.event === 'stats' && (e.check_ins as number) >= devices);
    const summary = await s.stop();
    expect(summary).toMatchObject({ enrolled: devices, errors: 0 });
    return summary;
  };

  it(`enrolls ${N} devices with every Enroll call in flight at once and writes the cache; a second run reuses it; a larger one enrolls only the rest`, async () => {
    const token = await fleet.api.enrollToken('bulk', N);
    const first = await run({ token, devices: N });
    const enrolled = first.events().find((e) => e.event === 'enrolled')!;
    expect(enrolled).toMatchObject({ event: 'enrolled', devices: N, cached: 0, enrolled_now: N, errors: 0, connection: 'per-check-in' });
    expect(enrolled.identity_bytes_per_device).toBeGreaterThan(32);
    expect(enrolled.identity_bytes_per_device).toBeLessThan(1024);
    await fleet.waitOnline(first.names);
    await checkInAll(first, N);
    expect((await stat(cacheFile())).mode & 0o777).toBe(0o600);

    // the token is used up: a run that enrolled anything would fail
    const second = await run({ token, devices: N });
    expect(second.events().find((e) => e.event === 'enrolled')).toMatchObject({ event: 'enrolled', devices: N, cached: N, enrolled_now: 0, errors: 0 });
    const again = await checkInAll(second, N);
    expect(again.checkIns).toBeGreaterThanOrEqual(N);

    const larger = await run({ token: await fleet.api.enrollToken('bulk-more', 5), devices: N + 5 });
    expect(larger.events().find((e) => e.event === 'enrolled')).toMatchObject({ event: 'enrolled', devices: N + 5, cached: N, enrolled_now: 5, errors: 0 });
    await fleet.waitOnline(larger.names);
    await checkInAll(larger, N + 5);
    sim = undefined;
  });

  /** A simulator run expected to stop before its fleet starts: its exit and stderr reason. */
  const refused = async (args: string[]) => {
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' };
    const base = ['--server', fleet.server.deviceAddr, '--token', 'svce_not-a-token', '--devices', String(N), '--identities', cacheFile()];
    const proc = new Proc('sim-refused', SIM_MAIN, [...base, ...args, '--duration', '20'], env);
    const exit = await proc.exited;
    expect(exit, proc.tail()).toEqual({ code: 1, signal: null });
    return proc.lines.filter((l) => l.startsWith('svc-sim: '));
  };

  it.skipIf(!haveOpenssl)('refuses the cache, naming why, for another server CA, another prefix, or a server that no longer knows its devices', async () => {
    const file = cacheFile().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const otherCa = makeCa(root.dir, 'other-ca', { cn: 'other', days: 1 }).cert;
    expect(await refused(['--server-ca', otherCa, '--prefix', 'bulk'])).toEqual([
      expect.stringMatching(
        new RegExp(`^svc-sim: --identities ${file}: enrolled with --server-ca \\(SHA-256\\) "[0-9a-f]{64}", this run has "[0-9a-f]{64}"; use another file`),
      ),
    ]);
    expect(await refused(['--server-ca', fleet.server.serverCaFile, '--prefix', 'other'])).toEqual([
      expect.stringMatching(new RegExp(`^svc-sim: --identities ${file}: enrolled with --prefix "bulk", this run has "other"; use another file`)),
    ]);
    await fleet.api.raw('DELETE', '/devices/bulk-000000');
    expect(await refused(['--server-ca', fleet.server.serverCaFile, '--prefix', 'bulk'])).toEqual([
      expect.stringMatching(
        new RegExp(
          `^svc-sim: --identities ${file}: the server refused cached device bulk-000000 of tenant [0-9a-f-]{36} \\(.+\\); the cache was enrolled against another server or tenant`,
        ),
      ),
    ]);
  });
});
