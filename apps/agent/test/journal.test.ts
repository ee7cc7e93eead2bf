import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Journal, isAgentError, nodeJournalIo, type DesiredState, type JournalIo } from '../src/index.js';
import { tempDir } from './helpers/tools.js';

const digest = (c: string) => `sha256:${c.repeat(64)}` as const;
const desired: DesiredState = {
  kind: 'signed',
  tenant: '7d3c2a1e-4b5f-4c6d-8e9f-0a1b2c3d4e5f',
  release: { product: 'p', version: '1.0.0', payload_digest: digest('a'), envelope_digest: digest('b') },
  transaction: { id: 'tx1', member_count: 1 },
  members: [
    {
      component: 'm',
      kind: 'model',
      rolloutId: 'ro-1',
      target: 'm/1',
      digest: digest('c'),
      length: 3,
      mediaType: 'application/octet-stream',
      group: 0,
      position: 0,
    },
  ],
  health: { probes: [] },
};
const line = (o: Record<string, unknown>) =>
  `${JSON.stringify({ v: 1, seq: 1, at: '2026-01-01T00:00:00Z', kind: 'tx', tx: 'a', state: 'downloading', event: 'download-started', ...o })}\n`;

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(() => cleanup());

describe('crash journal', () => {
  it('replays transitions and data from disk, one JSON line per change with a version', async () => {
    const j = await Journal.open(dir);
    await j.begin('tx1', { desired });
    await j.transition('tx1', 'download-started');
    await j.note('tx1', { group: 2 });
    const again = await Journal.open(dir);
    expect(again.get('tx1')).toEqual({ tx: 'tx1', state: 'downloading', data: { desired, group: 2 }, resumptions: 0 });
    const lines = (await readFile(j.path, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(3);
    expect(lines.every((l) => l.v === 1)).toBe(true);
  });

  it('refuses a transition the table does not have with its own code, and writes nothing', async () => {
    const j = await Journal.open(dir);
    await j.begin('tx1', { desired });
    await expect(j.transition('tx1', 'committed')).rejects.toMatchObject({ code: 'TRANSITION_ILLEGAL', field: 'state' });
    expect(j.get('tx1')!.state).toBe('desired-persisted');
    expect((await readFile(j.path, 'utf8')).trim().split('\n')).toHaveLength(1);
  });

  it('ignores a torn final line and repairs the file before the next append', async () => {
    const j = await Journal.open(dir);
    await j.begin('tx1', { desired });
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
    const err = await Journal.open(dir).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'JOURNAL_CORRUPT', field: 'line' });
    expect((err as Error).message).toMatch(/journal\.jsonl line 2: line is not JSON$/);
  });

  it('refuses a record of a version it cannot read with its own code, naming the version', async () => {
    for (const v of ['2', '0', '"1"']) {
      await writeFile(join(dir, 'journal.jsonl'), `{"v":${v},"seq":1,"at":"x","kind":"online"}\n`);
      const err = await Journal.open(dir).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'JOURNAL_VERSION_UNSUPPORTED', field: 'v' });
      expect((err as Error).message).toContain(`version ${v}; this agent reads version 1`);
    }
    await writeFile(join(dir, 'journal.jsonl'), '{"seq":1,"at":"x","kind":"online"}\n');
    await expect(Journal.open(dir)).rejects.toMatchObject({ code: 'JOURNAL_VERSION_UNSUPPORTED' });
  });

  it('refuses an unknown state or event by field', async () => {
    await writeFile(join(dir, 'journal.jsonl'), line({ state: 'exploded' }));
    await expect(Journal.open(dir)).rejects.toMatchObject({ code: 'JOURNAL_CORRUPT', field: 'state' });
    await writeFile(join(dir, 'journal.jsonl'), line({ event: 'teleported' }));
    await expect(Journal.open(dir)).rejects.toMatchObject({ code: 'JOURNAL_CORRUPT', field: 'event' });
  });

  it('reads transaction data field by field: every bad or unknown field is named', async () => {
    const bad = { desired: { ...desired, members: [{ ...desired.members[0], digest: 'md5:x' }] }, group: -1, 'member:m': { attempted: 'yes' }, colour: 'red' };
    await writeFile(join(dir, 'journal.jsonl'), line({ state: 'desired-persisted', event: 'verified', data: bad }));
    const err = (await Journal.open(dir).catch((e: unknown) => e)) as Error & { code: string; field: string };
    expect(err.code).toBe('JOURNAL_CORRUPT');
    expect(err.field).toBe('data.desired.members[0].digest');
    for (const f of ['data.desired.members[0].digest', 'data.group', 'data.member:m.attempted', 'data.member:m.verdict', 'data.colour: unknown field']) {
      expect(err.message).toContain(f);
    }
  });

  it('refuses a transaction whose first record has no desired state', async () => {
    await writeFile(join(dir, 'journal.jsonl'), line({ data: { group: 0 } }));
    await expect(Journal.open(dir)).rejects.toMatchObject({ code: 'JOURNAL_CORRUPT', field: 'data.desired' });
  });

  it('counts resumptions across restarts and through compaction', async () => {
    const j = await Journal.open(dir);
    await j.begin('tx1', { desired });
    expect(await j.resumed('tx1')).toBe(1);
    expect(await (await Journal.open(dir)).resumed('tx1')).toBe(2);
    const k = await Journal.open(dir);
    await k.compact();
    expect((await Journal.open(dir)).get('tx1')!.resumptions).toBe(2);
  });

  it('compaction drops reported transactions and keeps the last online time', async () => {
    const j = await Journal.open(dir);
    await j.noteOnline(new Date('2026-01-02T00:00:00Z'));
    await j.begin('done', { desired });
    for (const e of [
      'download-started',
      'downloaded',
      'staged',
      'activate-group',
      'group-activated',
      'group-healthy',
      'all-healthy',
      'committed',
      'receipt-persisted',
      'uploaded',
    ] as const) {
      await j.transition('done', e);
    }
    await j.begin('live', { desired, group: 1 });
    await j.compact();
    const again = await Journal.open(dir);
    expect(again.get('done')).toBeUndefined();
    expect(again.get('live')).toMatchObject({ state: 'desired-persisted', data: { desired, group: 1 } });
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
    await j.begin('tx1', { desired });
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
    await j.begin('tx1', { desired, retries: 1 });
    await expect(j.compact()).rejects.toMatchObject({ code: 'JOURNAL_WRITE_FAILED' });
    expect((await Journal.open(dir)).get('tx1')).toMatchObject({ data: { desired, retries: 1 } });
  });
});
