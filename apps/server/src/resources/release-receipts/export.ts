/**
 * The receipts evidence export (spec §4 `GET /release-receipts/export`): a tar of the exact
 * receipt envelope bytes as accepted, `device-cas.pem` (every device CA certificate of the
 * tenant, current and retired, so each receipt verifies offline with `svc-release
 * verify-receipt --ca device-cas.pem`), plus `index.jsonl` describing each file. Streamed: the
 * rows come from an async iterator (keyset-paged from the database) and each entry is written
 * as it arrives; the index is the LAST entry because it is only complete after the last
 * receipt (a reader that needs it first can buffer just the index).
 */
import type { Readable } from 'node:stream';
import { digestHex, type Digest } from '@svc/release-core';
import { pack as tarPack } from 'tar-stream';

export interface ExportRow {
  id: string;
  device: string;
  rollout_id: string | null;
  transaction_id: string | null;
  release_id: string;
  payload_digest: Digest;
  envelope_digest: Digest;
  accepted_at: Date;
  label: string;
  envelope_bytes: Uint8Array;
}

export function exportFileName(row: Pick<ExportRow, 'envelope_digest'>): string {
  // content-addressed: the name is the envelope digest, so the archive verifies itself
  return `receipts/${digestHex(row.envelope_digest)}.dsse.json`;
}

export function receiptExportStream(rows: AsyncIterable<ExportRow>, now: Date, deviceCasPem = ''): Readable {
  const pack = tarPack();
  const mtime = now;
  void (async () => {
    const index: string[] = [];
    try {
      if (deviceCasPem !== '') await entry(pack, 'device-cas.pem', new TextEncoder().encode(deviceCasPem), mtime);
      for await (const r of rows) {
        const name = exportFileName(r);
        await entry(pack, name, r.envelope_bytes, mtime);
        index.push(
          JSON.stringify({
            file: name,
            receipt_id: r.id,
            device: r.device,
            rollout_id: r.rollout_id,
            transaction_id: r.transaction_id,
            release_id: r.release_id,
            payload_digest: r.payload_digest,
            envelope_digest: r.envelope_digest,
            accepted_at: r.accepted_at.toISOString(),
            label: r.label,
          }),
        );
      }
      const idx = new TextEncoder().encode(index.map((l) => l + '\n').join(''));
      await entry(pack, 'index.jsonl', idx, mtime);
      pack.finalize();
    } catch (e) {
      pack.destroy(e as Error);
    }
  })();
  return pack as unknown as Readable;
}

function entry(pack: ReturnType<typeof tarPack>, name: string, bytes: Uint8Array, mtime: Date): Promise<void> {
  return new Promise((resolve, reject) => {
    pack.entry({ name, size: bytes.length, mtime, mode: 0o644 }, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length), (err) =>
      err ? reject(err) : resolve(),
    );
  });
}
