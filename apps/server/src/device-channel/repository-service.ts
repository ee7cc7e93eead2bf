import type { ServerWritableStream } from '@grpc/grpc-js';
import type { GetFileRequest, GetFileResponse, RepositoryServiceServer } from '@svc/device-proto';
import { invalidInput, notFound } from '../errors/server-error.js';
import type { DeviceChannelContext } from './context.js';
import { toServiceError } from './grpc-status.js';
import { authenticatePeer } from './peer.js';
import type { RepoRange } from './ports.js';
import { SERVER_TUNING } from '../limits.js';

const PATH_PATTERN = /^(metadata|targets)\/[A-Za-z0-9._+\-/]{1,500}$/;

/** A repository path a device may ask for: no traversal, no absolute paths, bounded. */
export function checkRepoPath(path: string): void {
  if (!PATH_PATTERN.test(path) || path.split('/').some((seg) => seg === '' || seg === '.' || seg === '..')) {
    throw invalidInput('path', 'must be metadata/<file> or targets/<path> without empty, "." or ".." segments');
  }
}

/**
 * GetFile: TUF metadata and targets of the device's OWN tenant (taken from its certificate),
 * streamed in chunks. The device verifies everything with its TUF client; this service only
 * moves bytes.
 */
async function getFile(ctx: DeviceChannelContext, call: ServerWritableStream<GetFileRequest, GetFileResponse>): Promise<void> {
  const peer = await authenticatePeer(call, ctx.db, ctx.cas, ctx.credentials, ctx.now(), ctx.connections);
  const { path, offset, length } = call.request;
  checkRepoPath(path);
  if (!Number.isSafeInteger(offset) || offset < 0) throw invalidInput('offset', 'must be a non-negative integer');
  if (!Number.isSafeInteger(length) || length < 0) throw invalidInput('length', 'must be a non-negative integer');
  const range: RepoRange | undefined =
    length > 0 ? { kind: 'from-to', start: offset, end: offset + length - 1 } : offset > 0 ? { kind: 'from', start: offset } : undefined;
  const file = await ctx.repository.openRepoFile(peer.tenantId, path, range).catch((err: unknown) => {
    // The repository's own codes (METADATA_NOT_FOUND, TARGET_NOT_FOUND, BLOB_RANGE_INVALID) as
    // the device sees them: NOT_FOUND / INVALID_ARGUMENT naming the field.
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && code.endsWith('_NOT_FOUND')) throw notFound(`repository file ${path}`);
    if (code === 'BLOB_RANGE_INVALID') throw invalidInput('offset', 'range not satisfiable');
    throw err;
  });
  let first = true;
  for await (const piece of file.stream) {
    for (let at = 0; at < piece.length; at += SERVER_TUNING.repositoryChunkBytes) {
      const data = Buffer.from(piece.buffer, piece.byteOffset + at, Math.min(SERVER_TUNING.repositoryChunkBytes, piece.length - at));
      const ok = call.write({ data, totalLength: first ? file.totalLength : 0 });
      first = false;
      // backpressure: wait for the HTTP/2 stream to drain
      if (!ok) await new Promise<void>((resolve) => call.once('drain', () => resolve()));
    }
  }
  if (first) call.write({ data: Buffer.alloc(0), totalLength: file.totalLength });
}

export function repositoryService(ctx: DeviceChannelContext): RepositoryServiceServer {
  return {
    getFile: (call) => {
      getFile(ctx, call).then(
        () => call.end(),
        (err: unknown) => call.emit('error', toServiceError(err, ctx.log)),
      );
    },
  };
}
