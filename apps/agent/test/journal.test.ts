import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Journal, isAgentError, nodeJournalIo, type JournalIo } from '../src/index.js';
import { tempDir } from './helpers/tools.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(() => cleanup());

describe('crash journal', () => {
  it('replays transitions and data from disk, one JSON line per change with a version', async () => {
    const j = await Journal.open(dir);
    await j.begin('tx1', { desired: { a: 1 } });
    await j.transition('tx1', 'download-started');
    await j.note('tx1', { extra: 'x' });
    const again = await Journal.open(dir);
    expect(again.get('tx1')).toMatchObject({ state: 'downloading', data: { desired: { a: 1 }, extra: 'x' }, resumptions: 0 });
    const lines = (await readFile(j.path, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    expect(lines).toHaveLength(3);
    expect(lines.every((l) => l.v === 1)).toBe(true);
  });

  it('refuses a transition the table does not have', async () => {
    const j = await Journal.open(dir);
    await j.begin('tx1', {});
    await expect(j.transition('tx1', 'committed')).rejects.toMatchObject({ code: 'JOURNAL_CORRUPT' });
    expect(j.get('tx1')!.state).toBe('desired-persisted');
  });

  it('ignores a torn final line and repairs the file before the next append', async () => {
    const j = await Journal.open(dir);
    await j.begin('tx1', {});
    await j.transition('tx1', 'download-started');
    await appendFile(j.path, '{"v":1,"seq":3,"at":"2026-01-01T00:00:00Z","kind":"tx","tx":"tx1","state":"downl');
    const again = await Journal.open(dir);
    expect(again.get('tx1')!.state).toBe('downloading');
    await again.transition('tx1', 'downloaded');
    const third = await Journal.open(dir);
    expect(third.get('tx1')!.state).toBe('downloaded');
    for (const line of (await readFile(j.path, 'utf8')).trim().split('\n')) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('reports a corrupt complete line by number', async () => {
    await writeFile(join(dir, 'journal.jsonl'), '{"v":1,"seq":1,"at":"x","kind":"online"}\nnot json\n');
    await expect(Journal.open(dir)).rejects.toMatchObject({ code: 'JOURNAL_CORRUPT', field: 'line 2' });
  });

  it('refuses records of an unknown version or state', async () => {
    await writeFile(join(dir, 'journal.jsonl'), '{"v":2,"seq":1,"at":"x","kind":"online"}\n');
    await expect(Journal.open(dir)).rejects.toMatchObject({ code: 'JOURNAL_CORRUPT' });
    await writeFile(join(dir, 'journal.jsonl'), '{"v":1,"seq":1,"at":"x","kind":"tx","tx":"a","state":"exploded","event":"verified"}\n');
    await expect(Journal.open(dir)).rejects.toMatchObject({ code: 'JOURNAL_CORRUPT' });
  });

  it('counts resumptions across restarts and through compaction', async () => {
    const j = await Journal.open(dir);
    await j.begin('tx1', {});
    expect(await j.resumed('tx1')).toBe(1);
    expect(await (await Journal.open(dir)).resumed('tx1')).toBe(2);
    const k = await Journal.open(dir);
    await k.compact();
    expect((await Journal.open(dir)).get('tx1')!.resumptions).toBe(2);
  });

  it('compaction drops reported transactions and keeps the last online time', async () => {
    const j = await Journal.open(dir);
    await j.noteOnline(new Date('2026-01-02T00:00:00Z'));
    await j.begin('done', {});
    for (const e of ['download-started', 'downloaded', 'staged', 'activate-group', 'group-activated', 'group-healthy', 'all-healthy', 'committed', 'receipt-persisted', 'uploaded'] as const) {
      await j.transition('done', e);
    }
    await j.begin('live', { x: 1 });
    await j.compact();
    const again = await Journal.open(dir);
    expect(again.get('done')).toBeUndefined();
    expect(again.get('live')).toMatchObject({ state: 'desired-persisted', data: { x: 1 } });
    expect(again.lastOnlineAt?.toISOString()).toBe('2026-01-02T00:00:00.000Z');
    expect((await readFile(j.path, 'utf8')).trim().split('\n')).toHaveLength(2);
  });

  it('a failed fsync leaves the state unchanged and the journal consistent (write fault)', async () => {
    let failNext = false;
    const io: JournalIo = {
      ...nodeJournalIo,
      async append(path, bytes) {
        if (failNext) {
          failNext = false;
          // a torn write: half the bytes reach the disk, then the fsync fails
          await appendFile(path, Buffer.from(bytes).subarray(0, 10));
          throw Object.assign(new Error('fsync: EIO'), { code: 'EIO' });
        }
        return nodeJournalIo.append(path, bytes);
      },
    };
    const j = await Journal.open(dir, { io });
    await j.begin('tx1', {});
    failNext = true;
    const err = await j.transition('tx1', 'download-started').catch((e: unknown) => e);
    expect(isAgentError(err, 'JOURNAL_WRITE_FAILED')).toBe(true);
    expect(j.get('tx1')!.state).toBe('desired-persisted');
    // the next append first rewrites the file without the torn bytes
    await j.transition('tx1', 'download-started');
    const again = await Journal.open(dir);
    expect(again.get('tx1')!.state).toBe('downloading');
  });

  it('a failed compaction keeps the previous journal intact', async () => {
    const j = await Journal.open(dir, {
      io: { ...nodeJournalIo, replace: async () => Promise.reject(Object.assign(new Error('ENOSPC'), { code: 'ENOSPC' })) },
    });
    await j.begin('tx1', { k: 'v' });
    await expect(j.compact()).rejects.toMatchObject({ code: 'JOURNAL_WRITE_FAILED' });
    expect((await Journal.open(dir)).get('tx1')).toMatchObject({ data: { k: 'v' } });
  });
});
