import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncDir, writeFileAtomic } from '../journal/io.js';

export type OutboxKind = 'receipt' | 'legacy-status';

export interface OutboxEntry {
  id: string;
  kind: OutboxKind;
  file: string;
}

const SUFFIX: Record<OutboxKind, string> = { receipt: '.receipt.json', 'legacy-status': '.legacy-status.json' };
const DELIVERY_SUFFIX = '.delivery.json';

/**
 * Receipts waiting for upload, as the exact bytes that were signed (spec §2.3 rule 2: a failed
 * upload is retried from these bytes, never re-signed). The channel lists, uploads, and
 * tells the orchestrator (`markReported`), which removes the file.
 */
export class Outbox {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  fileOf(id: string, kind: OutboxKind): string {
    return join(this.dir, `${encodeURIComponent(id)}${SUFFIX[kind]}`);
  }

  async put(id: string, kind: OutboxKind, bytes: Uint8Array): Promise<string> {
    const file = this.fileOf(id, kind);
    await writeFileAtomic(file, bytes);
    return file;
  }

  async list(): Promise<OutboxEntry[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    const out: OutboxEntry[] = [];
    for (const name of names.sort()) {
      for (const kind of Object.keys(SUFFIX) as OutboxKind[]) {
        if (name.endsWith(SUFFIX[kind])) out.push({ id: decodeURIComponent(name.slice(0, -SUFFIX[kind].length)), kind, file: join(this.dir, name) });
      }
    }
    return out;
  }

  read(entry: OutboxEntry): Promise<Uint8Array> {
    return readFile(entry.file);
  }

  /**
   * The delivery report beside a receipt (docs/delta-updates.md): not signed and not part of the
   * receipt, written before it and sent with it. Not an entry of its own: `list` skips it.
   */
  deliveryFileOf(id: string): string {
    return join(this.dir, `${encodeURIComponent(id)}${DELIVERY_SUFFIX}`);
  }

  async putDelivery(id: string, bytes: Uint8Array): Promise<void> {
    await writeFileAtomic(this.deliveryFileOf(id), bytes);
  }

  /** The delivery report stored beside receipt `id`, or undefined when there is none. */
  async readDelivery(id: string): Promise<Uint8Array | undefined> {
    try {
      return await readFile(this.deliveryFileOf(id));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }

  async remove(id: string, kind: OutboxKind): Promise<void> {
    await rm(this.fileOf(id, kind), { force: true });
    await rm(this.deliveryFileOf(id), { force: true });
    await fsyncDir(this.dir).catch(() => undefined);
  }
}
