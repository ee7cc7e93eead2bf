import type { ClientReadableStream, ServiceError } from '@grpc/grpc-js';
import type { GetFileResponse, RepositoryServiceClient } from '@svc/device-proto';

/** Opens RepositoryService.GetFile and resolves once the first chunk (or the refusal) is in. */
export function openRepoStream(
  client: RepositoryServiceClient,
  path: string,
  offset = 0,
): Promise<{ first: GetFileResponse; rest: ClientReadableStream<GetFileResponse> }> {
  const stream = client.getFile({ path, offset, length: 0 }, { deadline: new Date(Date.now() + 10 * 60_000) });
  return new Promise((resolve, reject) => {
    const onData = (first: GetFileResponse) => {
      stream.off('error', onError);
      stream.pause();
      resolve({ first, rest: stream });
    };
    const onError = (err: ServiceError) => {
      stream.off('data', onData);
      reject(err);
    };
    stream.once('data', onData);
    stream.once('error', onError);
  });
}

/** A whole (small) repository file into memory. */
export async function readRepoFile(client: RepositoryServiceClient, path: string): Promise<Buffer> {
  const { first, rest } = await openRepoStream(client, path);
  const parts = [first.data];
  for await (const m of rest as AsyncIterable<GetFileResponse>) parts.push(m.data);
  return Buffer.concat(parts);
}
