import { rename } from 'node:fs/promises';
import { LegacyStatus, type UploadReceiptResponse } from '@svc/device-proto';
import { LIMITS } from '@svc/release-core';
import type { Outbox, OutboxEntry } from '../transaction/outbox.js';
import { call, errorCode, isTransient, type ChannelClients } from './client.js';

export interface UploadResult {
  uploaded: string[];
  /** Refused for good (moved aside as `*.refused`, never retried). */
  refused: string[];
  /** Left in place for the next attempt (server unreachable or busy). */
  pending: string[];
}

export interface OutboxUploaderDeps {
  clients: ChannelClients;
  outbox: Outbox;
  /** The server acknowledged `tx`: close it and delete the outbox file (Orchestrator.markReported). */
  acknowledged(tx: string, entry: OutboxEntry): Promise<void>;
  log?: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}

/**
 * Uploads what the outbox holds, from the exact persisted bytes (spec §2.3 rule 2: never re-signed).
 * A file is deleted only after the server acknowledged it (a duplicate counts: the server
 * already has these bytes). Transient failures leave the file for the next round.
 */
export async function uploadOutbox(d: OutboxUploaderDeps): Promise<UploadResult> {
  const result: UploadResult = { uploaded: [], refused: [], pending: [] };
  for (const entry of await d.outbox.list()) {
    const bytes = await d.outbox.read(entry);
    try {
      if (entry.kind === 'receipt') {
        const delivery = await d.outbox.readDelivery(entry.id);
        const req = { envelope: Buffer.from(bytes), ...(delivery ? { deliveryReport: Buffer.from(delivery) } : {}) };
        await call<UploadReceiptResponse>((md, o, cb) => d.clients.device.uploadReceipt(req, md, o, cb));
      } else {
        const doc = JSON.parse(Buffer.from(bytes).toString('utf8')) as { rollout: string; status: string; error?: string | null };
        const status = doc.status === 'installed' ? LegacyStatus.LEGACY_STATUS_INSTALLED : LegacyStatus.LEGACY_STATUS_FAILED;
        const detail = doc.status === 'installed' ? '' : `${doc.status}${doc.error ? `: ${doc.error}` : ''}`.slice(0, LIMITS.legacyDetailChars);
        await call((md, o, cb) => d.clients.device.reportLegacyStatus({ rolloutId: doc.rollout, status, detail }, md, o, cb));
      }
      await d.acknowledged(entry.id, entry);
      result.uploaded.push(entry.id);
    } catch (err) {
      if (isTransient(err)) {
        result.pending.push(entry.id);
        continue;
      }
      // A refusal is final for these bytes: keep them as evidence, stop retrying.
      d.log?.('error', 'outbox entry refused by the server', { tx: entry.id, code: errorCode(err), reason: (err as Error).message });
      await rename(entry.file, `${entry.file}.refused`);
      // its delivery report stays beside it, also out of the way
      const delivery = d.outbox.deliveryFileOf(entry.id);
      await rename(delivery, `${delivery}.refused`).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT') throw e;
      });
      result.refused.push(entry.id);
    }
  }
  return result;
}
