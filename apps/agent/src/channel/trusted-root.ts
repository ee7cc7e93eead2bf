import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RepositoryServiceClient } from '@svc/device-proto';
import { readRepoFile } from './repo-stream.js';

/**
 * Puts the TUF trust anchor in place: a provisioned root.json when given, otherwise the
 * repository's current root fetched once over the authenticated channel right after
 * enrollment (the connection is already pinned to the server CA). Never replaced afterwards
 * except by tuf-js's own verified root rotation.
 */
export async function ensureTrustedRoot(client: RepositoryServiceClient, metadataDir: string, provisionedRoot?: string): Promise<void> {
  const rootFile = join(metadataDir, 'root.json');
  if (
    await stat(rootFile).then(
      () => true,
      () => false,
    )
  )
    return;
  await mkdir(metadataDir, { recursive: true });
  if (provisionedRoot !== undefined) {
    await writeFile(rootFile, await readFile(provisionedRoot));
    return;
  }
  await writeFile(rootFile, await readRepoFile(client, 'metadata/root.json'), { mode: 0o644 });
}
