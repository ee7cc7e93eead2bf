import { status, type ServiceError } from '@grpc/grpc-js';
import type { GetFileResponse, RepositoryServiceClient } from '@svc/device-proto';
import { openRepoStream } from './repo-stream.js';
import { BaseFetcher } from 'tuf-js';
import { DownloadHTTPError } from 'tuf-js/dist/error.js';

/** Base URLs the Updater is given; `fetch` maps them back to repository paths. */
export const CHANNEL_METADATA_URL = 'svc-channel://repo/metadata/';
export const CHANNEL_TARGETS_URL = 'svc-channel://repo/targets/';
const PREFIX = 'svc-channel://repo/';

/**
 * tuf-js fetcher over the device channel: TUF metadata and targets travel inside the mTLS
 * connection (RepositoryService.GetFile) instead of plain HTTP. tuf-js still checks every
 * signature, version, length and hash; this class only moves bytes. A NOT_FOUND becomes an
 * HTTP-404 DownloadHTTPError, which is how tuf-js recognises "no newer root".
 */
export class ChannelFetcher extends BaseFetcher {
  constructor(private readonly client: RepositoryServiceClient) {
    super();
  }

  override async fetch(url: string): Promise<ReadableStream<Uint8Array<ArrayBuffer>>> {
    if (!url.startsWith(PREFIX)) throw new DownloadHTTPError(`not a channel URL: ${url}`, 400);
    const path = decodeURIComponent(url.slice(PREFIX.length));
    let opened: Awaited<ReturnType<typeof openRepoStream>>;
    try {
      opened = await openRepoStream(this.client, path);
    } catch (e) {
      const err = e as ServiceError;
      if (err.code === status.NOT_FOUND) throw new DownloadHTTPError(`${path}: not found`, 404);
      if (err.code === status.PERMISSION_DENIED) throw new DownloadHTTPError(`${path}: ${err.details}`, 403);
      throw e;
    }
    const { first, rest } = opened;
    return new ReadableStream<Uint8Array<ArrayBuffer>>({
      start(controller) {
        if (first.data.length > 0) controller.enqueue(new Uint8Array(first.data));
        rest.on('data', (m: GetFileResponse) => controller.enqueue(new Uint8Array(m.data)));
        rest.on('error', (err) => controller.error(err));
        rest.on('end', () => controller.close());
        rest.resume();
      },
      cancel() {
        rest.cancel();
      },
    });
  }
}
