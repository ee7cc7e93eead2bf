/**
 * Where a generated report goes before it is served: a private temporary file, hashed and
 * counted while it is written. The report's SHA-256 goes on its audit row before the first
 * byte reaches the client, and the client reads the file at its own pace after the unit of
 * work has committed (a slow client never holds the database). Memory stays at one chunk.
 */
import { createHash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform, type Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { digestFromHex, type Digest } from '@svc/release-core';

export interface WrittenReport {
  path: string;
  sha256: Digest;
  bytes: number;
}

export class ReportFile {
  readonly path: string;
  /** Write (or pipe) the report here; ending it finishes the file. */
  readonly input: Writable;
  readonly #hash = createHash('sha256');
  #bytes = 0;
  readonly #done: Promise<void>;

  constructor(extension: string, dir = tmpdir()) {
    this.path = join(dir, `svc-report-${randomUUID()}.${extension}`);
    const hash = this.#hash;
    const count = (n: number) => (this.#bytes += n);
    const input = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        count(chunk.length);
        callback(null, chunk);
      },
    });
    this.input = input;
    this.#done = pipeline(input, createWriteStream(this.path, { flags: 'wx', mode: 0o600 }));
    // a failure is reported by finished() or discarded by discard()
    this.#done.catch(() => undefined);
  }

  /** Writes text, waiting while the file catches up. */
  async write(chunk: string): Promise<void> {
    if (!this.input.write(chunk)) await once(this.input, 'drain');
  }

  /** Waits for the file to be complete (the input ended) and answers its digest and size. */
  async finished(): Promise<WrittenReport> {
    await this.#done;
    return { path: this.path, sha256: digestFromHex(this.#hash.digest('hex')), bytes: this.#bytes };
  }

  /** Drops a report that will not be served. */
  async discard(): Promise<void> {
    this.input.destroy();
    await this.#done.catch(() => undefined);
    await rm(this.path, { force: true });
  }
}

/** The report's bytes for the response; the file is removed once they are read (or the client goes away). */
export function serveReportFile(path: string): Readable {
  const stream = createReadStream(path);
  stream.once('close', () => void rm(path, { force: true }));
  return stream;
}
