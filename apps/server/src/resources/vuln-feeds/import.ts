/**
 * The OSV import flow over a stored upload: survey (a 400 before anything is written), start
 * or resume the import row, then batches of records from its cursor, then completion. Each
 * step is one command run by `run` (the route's `execute`), so each commits with its audit
 * row; a crash between steps leaves whole batches and a cursor to resume from.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { digestFromHex, type Digest } from '@svc/release-core';
import { isUniqueViolation } from '../../store/tx.js';
import { readRecords, surveyArchive, type Survey } from './archive.js';
import { completeOsvImport, importOsvBatch, startOsvImport, type BatchItem, type RunCommand } from './commands.js';
import { readOsvRecord } from './osv.js';
import type { ImportRow } from './queries.js';
import { SERVER_TUNING } from '../../limits.js';

export async function fileDigest(path: string): Promise<Digest> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return digestFromHex(h.digest('hex'));
}

export interface OsvImportResult {
  row: ImportRow;
  /** false: these bytes were imported before (nothing changed) */
  created: boolean;
  resumed: boolean;
}

export async function importOsvArchive(run: RunCommand, path: string, source: string, survey?: Survey): Promise<OsvImportResult> {
  const s = survey ?? (await surveyArchive(path));
  const digest = await fileDigest(path);
  let started;
  try {
    started = await run(startOsvImport, { source, digest, entries: s.entries.length });
  } catch (e) {
    if (!isUniqueViolation(e)) throw e;
    started = await run(startOsvImport, { source, digest, entries: s.entries.length });
  }
  let row = started.row;
  if (row.state === 'completed') return { row, created: false, resumed: false };
  const resumed = !started.created;
  const importId = row.id;
  let batch: BatchItem[] = [];
  let from = row.entries_done;
  // One batch is written while the next is read and parsed; batches still commit one after
  // the other, in cursor order (the next starts only when the previous has committed).
  let writing: Promise<void> = Promise.resolve();
  let failed: { error: unknown } | undefined;
  const written = async () => {
    await writing;
    if (failed) throw failed.error;
  };
  const flush = async (to: number) => {
    await written();
    const input = { importId, from, to, items: batch };
    batch = [];
    from = to;
    writing = run(importOsvBatch, input).then(
      (r) => {
        row = r;
      },
      (error: unknown) => {
        failed = { error };
      },
    );
  };
  for await (const item of readRecords(path, s, row.entries_done)) {
    if ('skip' in item) batch.push(item);
    else {
      const r = readOsvRecord(item.bytes);
      batch.push('skip' in r ? { index: item.index, name: item.name, skip: r.skip } : { index: item.index, name: item.name, advisory: r });
    }
    if (batch.length >= SERVER_TUNING.feedBatchRecords) await flush(item.index + 1);
  }
  if (batch.length > 0) await flush(s.entries.length);
  await written();
  row = await run(completeOsvImport, { importId });
  return { row, created: !resumed, resumed };
}
