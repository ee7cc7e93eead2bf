import { spawnSync } from 'node:child_process';
import { mkdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet } from '../src/index.js';
import { tempDir } from '@svc/test-kit';
import { requireTool } from './helpers/tools.js';

const JOURNAL_REMOTE = '/lib/systemd/systemd-journal-remote';
const hasTools = requireTool('journalctl', 'systemd') && requireTool(JOURNAL_REMOTE, 'systemd-journal-remote');
const DEVICE = 'logs-gw';
const UNIT = 'svc-agent.service';
const MAX_BYTES = 8192;

/**
 * Writes real journald files (systemd-journal-remote converts the journal export format):
 * the agent reads them with `journalctl --directory`, the same query it runs on the system
 * journal of a device.
 */
function writeJournal(dir: string, entries: { unit: string; message: string; at: Date }[]): void {
  const text = entries
    .map((e, i) =>
      [
        `__REALTIME_TIMESTAMP=${e.at.getTime() * 1000}`,
        `__MONOTONIC_TIMESTAMP=${i + 1}`,
        '_BOOT_ID=0123456789abcdef0123456789abcdef',
        `_SYSTEMD_UNIT=${e.unit}`,
        '_HOSTNAME=logs-gw',
        `SYSLOG_IDENTIFIER=${e.unit.replace(/\.service$/, '')}`,
        'PRIORITY=6',
        `MESSAGE=${e.message}`,
        '',
        '',
      ].join('\n'),
    )
    .join('');
  const r = spawnSync(JOURNAL_REMOTE, [`--output=${join(dir, 'remote.journal')}`, '-'], { input: text, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`systemd-journal-remote exited ${r.status}: ${r.stderr}`);
}

describe.skipIf(!hasTools)('log bundles from a real agent process', () => {
  let root: Awaited<ReturnType<typeof tempDir>>;
  let fleet: Fleet;
  let logs: string;

  beforeAll(async () => {
    root = await tempDir('e2e-logs');
    logs = join(root.dir, 'device-logs');
    await mkdir(join(logs, 'journal'), { recursive: true });
    await mkdir(join(logs, 'app.d'), { recursive: true });
    const now = Date.now();
    writeJournal(join(logs, 'journal'), [
      { unit: UNIT, message: 'old entry outside the window', at: new Date(now - 3 * 3600_000) },
      { unit: 'other.service', message: 'entry of another unit', at: new Date(now - 60_000) },
      { unit: UNIT, message: 'agent entry inside the window', at: new Date(now - 60_000) },
    ]);
    // 20 KiB of numbered lines: more than the bundle's cap, so only the newest part is kept
    await writeFile(join(logs, 'app.log'), Array.from({ length: 800 }, (_, i) => `app line ${String(i).padStart(5, '0')} ${'x'.repeat(12)}`).join('\n') + '\n');
    await writeFile(join(logs, 'stale.log'), 'written long ago\n');
    const old = new Date(now - 5 * 3600_000);
    await utimes(join(logs, 'stale.log'), old, old);
    for (const [i, name] of ['a.log', 'b.log', 'c.log'].entries()) {
      await writeFile(join(logs, 'app.d', name), `${name} line\n`);
      const t = new Date(now - (3 - i) * 60_000); // c.log newest
      await utimes(join(logs, 'app.d', name), t, t);
    }
    fleet = await Fleet.start({
      root: root.dir,
      devices: [DEVICE],
      agentEnv: () => ({
        SVC_AGENT_LOG_JOURNAL_DIR: join(logs, 'journal'),
        SVC_AGENT_LOG_FILES: [join(logs, 'app.log'), join(logs, 'stale.log'), join(logs, 'missing.log'), join(logs, 'app.d')].join(','),
        SVC_AGENT_LOG_MAX_BYTES: String(MAX_BYTES),
        SVC_AGENT_LOG_MAX_FILES: '3',
        SVC_AGENT_LOG_WINDOW_S: '3600',
      }),
    });
  });

  afterAll(async () => {
    await fleet?.stop();
    await root?.cleanup();
  });

  it('is collected within its caps, compressed, uploaded on the next heartbeat and downloadable', async () => {
    const req = await fleet.requestLogs(DEVICE);
    expect(req.status).toBe('pending');
    const { bytes, contentType, entries } = await fleet.downloadLogs(DEVICE, req.id);
    expect(contentType).toBe('application/gzip');
    expect(bytes.subarray(0, 2).toString('hex')).toBe('1f8b');
    expect(entries.map((e) => e.name)).toEqual(['manifest.json', 'journal.log', 'files/1-app.log', 'files/2-c.log', 'files/3-b.log']);
    const manifest = JSON.parse(entries[0]!.bytes.toString('utf8')) as {
      device: string;
      log_request: string;
      limits: unknown;
      sources: { source: string; name: string; entry?: string; bytes: number; truncated: boolean; skipped?: string }[];
    };
    expect(manifest.device).toBe(DEVICE);
    expect(manifest.log_request).toBe(req.id);
    expect(manifest.limits).toEqual({ max_bytes: MAX_BYTES, max_files: 3 });
    const byName = new Map(manifest.sources.map((s) => [s.name, s]));
    expect(byName.get(join(logs, 'stale.log'))?.skipped).toBe('not written within the window');
    expect(byName.get(join(logs, 'missing.log'))?.skipped).toBe('not found');
    expect(byName.get(join(logs, 'app.d', 'a.log'))?.skipped).toBe('over the file count cap (3)');
    expect(byName.get(join(logs, 'app.log'))).toMatchObject({ entry: 'files/1-app.log', truncated: true });

    // journald: only the agent's unit, only inside the window
    const journal = entries[1]!.bytes.toString('utf8');
    expect(journal).toContain('agent entry inside the window');
    expect(journal).not.toContain('old entry outside the window');
    expect(journal).not.toContain('entry of another unit');
    // the newest lines of app.log, whole lines only, and everything within the size cap
    const app = entries[2]!.bytes.toString('utf8');
    expect(app.endsWith('app line 00799 xxxxxxxxxxxx\n')).toBe(true);
    expect(app).not.toContain('app line 00000');
    expect(app.startsWith('app line ')).toBe(true);
    expect(entries[3]!.bytes.toString('utf8')).toBe('c.log line\n');
    const logBytes = entries.slice(1).reduce((n, e) => n + e.bytes.length, 0);
    expect(logBytes).toBeLessThanOrEqual(MAX_BYTES);
    expect(logBytes).toBe(manifest.sources.reduce((n, s) => n + s.bytes, 0));
    // the agent said so in its own log
    expect(fleet.agents.get(DEVICE)!.lines.some((l) => l.includes('"msg":"log bundle uploaded"') && l.includes(req.id))).toBe(true);
  });

  it('waits for a device that is not running and is fulfilled when it checks in again', async () => {
    await fleet.agents.get(DEVICE)!.stop();
    const req = await fleet.requestLogs(DEVICE);
    await new Promise((r) => setTimeout(r, 3000));
    const status = await fleet.api.get<{ status: string }>(`/devices/${DEVICE}/log-requests/${req.id}`);
    expect(status.status).toBe('pending');
    const early = await fleet.api.raw('GET', `/devices/${DEVICE}/log-requests/${req.id}/download`, undefined, 409);
    expect(((await early.json()) as { error: string }).error).toMatch(/not uploaded yet/);
    await fleet.startAgent(DEVICE);
    const { entries } = await fleet.downloadLogs(DEVICE, req.id);
    const manifest = JSON.parse(entries[0]!.bytes.toString('utf8')) as { log_request: string };
    expect(manifest.log_request).toBe(req.id);
    expect(entries.some((e) => e.name === 'files/1-app.log')).toBe(true);
  });
});
