/**
 * The fleet simulator (apps/agent/src/sim) against the real server over loopback: every
 * simulated device enrolls with its own key, checks in over its own mTLS connection and
 * uploads a real signed receipt the pipeline accepts.
 */
import 'reflect-metadata';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSim } from '../../agent/src/sim/main.js';
import { availableDrivers } from './helpers/store.js';
import { publishSignedRollout, startChannelFixture, type ChannelFixture } from './device-channel.fixture.js';

describe.each(availableDrivers())('fleet simulator on %s', (driver) => {
  let f: ChannelFixture;
  beforeAll(async () => {
    f = await startChannelFixture(driver);
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('enrolls N devices, checks in, and every device uploads an accepted receipt', async () => {
    const n = 6;
    const lines: string[] = [];
    const stop = new AbortController();
    const token = await f.newToken({ maxUses: n });
    const sim = runSim(
      { server: f.addr, token, devices: n, intervalS: 1, serverCa: join(f.dataDir, 'ca', 'server', 'ca.pem'), prefix: 'sim', concurrency: 3, maxInFlight: 64, durationS: 0, statsEveryS: 1, pingFirstS: 0 },
      stop.signal,
      (l) => lines.push(l),
    );
    const names = Array.from({ length: n }, (_, i) => `sim-${String(i).padStart(6, '0')}`);
    const db = f.t.store.db;
    for (let i = 0; i < 100; i++) {
      const rows = await db.selectFrom('devices').select('name').where('name', 'in', names).execute();
      if (rows.length === n) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await publishSignedRollout(f, { devices: names, bytes: Buffer.from('sim\n'), placementPath: '/etc/sim.conf' });
    for (let i = 0; i < 100; i++) {
      const rows = await db.selectFrom('release_receipts' as never).selectAll().execute();
      if (rows.length === n) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // the database commits before the device has read the answer: wait for the sim to count it
    for (let i = 0; i < 100; i++) {
      if (lines.some((l) => JSON.parse(l).receipts === n)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    stop.abort();
    const summary = await sim;
    expect(summary.enrolled).toBe(n);
    expect(summary.receipts).toBe(n);
    expect(summary.errors).toBe(0);
    expect(summary.checkIns).toBeGreaterThanOrEqual(n);
    expect(JSON.parse(lines[0]!)).toMatchObject({ event: 'enrolled', devices: n, errors: 0 });
    const online = await db.selectFrom('devices').select('status').where('name', 'in', names).execute();
    expect(online.every((r) => r.status === 'online')).toBe(true);
  }, 60_000);
});
