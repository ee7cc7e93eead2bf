/**
 * The upload step of an OSV import: the request body streamed into a temp file (the
 * system temp directory, `TMPDIR`), capped (SERVER_LIMITS.feeds.maxArchiveBytes), so the archive can
 * be read twice (survey, then records) without holding it in memory. The caller removes it.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ServerError } from '../../errors/server-error.js';
import { SERVER_LIMITS } from '../../limits.js';

export async function storeUpload(body: Readable): Promise<{ path: string; bytes: number; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-feed-'));
  const path = join(dir, `feed-${randomUUID()}`);
  const remove = () => rm(dir, { recursive: true, force: true });
  let bytes = 0;
  try {
    await pipeline(
      body,
      async function* (source: AsyncIterable<Buffer>) {
        for await (const chunk of source) {
          bytes += chunk.length;
          if (bytes > SERVER_LIMITS.feeds.maxArchiveBytes)
            throw new ServerError('FEED_TOO_LARGE', `body: larger than ${SERVER_LIMITS.feeds.maxArchiveBytes} bytes`);
          yield chunk;
        }
      },
      createWriteStream(path),
    );
  } catch (e) {
    await remove();
    throw e;
  }
  if (bytes === 0) {
    await remove();
    throw new ServerError('FEED_INVALID', 'body: empty; send the archive as the request body');
  }
  return { path, bytes, remove };
}
