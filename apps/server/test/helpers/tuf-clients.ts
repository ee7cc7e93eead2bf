/**
 * Real tuf-js clients against the REST TUF routes (`/api/v1/tuf/<tenant>/...`), which need an
 * operator credential: the pinned tuf-js (the agent's, 5.0.1) and the previous major (the
 * `tuf-js-4` alias, 4.1.0), each with a fetcher that sends the given headers.
 *
 *   for (const client of TUF_CLIENTS) {
 *     const c = client.open({ metadataDir, targetDir, metadataBaseUrl, targetBaseUrl }, { authorization });
 *     const bytes = await c.fetchTarget('artifacts/fw/1.0/fw.bin');
 *   }
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import { BaseFetcher as BaseFetcher5, Updater as Updater5 } from 'tuf-js';
import { DownloadHTTPError as DownloadHTTPError5 } from 'tuf-js/dist/error.js';
import { BaseFetcher as BaseFetcher4, Updater as Updater4 } from 'tuf-js-4';
import { DownloadHTTPError as DownloadHTTPError4 } from 'tuf-js-4/dist/error.js';

export interface UpdaterPaths {
  metadataDir: string;
  targetDir: string;
  metadataBaseUrl: string;
  targetBaseUrl: string;
}

/** One refreshing client: a new Updater per `refresh`, as a device makes one per check. */
export interface TufClient {
  refresh(): Promise<void>;
  /** Refreshes, then downloads and verifies the target; undefined when the signed targets do not list it. */
  fetchTarget(path: string): Promise<Buffer | undefined>;
}

export interface TufClientKind {
  /** `tuf-js <version>`, read from the installed package. */
  name: string;
  version: string;
  open(paths: UpdaterPaths, headers: Record<string, string>): TufClient;
}

const require = createRequire(import.meta.url);
function installedVersion(pkg: string): string {
  return (JSON.parse(readFileSync(require.resolve(`${pkg}/package.json`), 'utf8')) as { version: string }).version;
}

async function get(url: string, headers: Record<string, string>, httpError: (message: string, status: number) => Error): Promise<Response> {
  const res = await fetch(url, { headers });
  if (!res.ok || res.body === null) {
    await res.body?.cancel();
    throw httpError(`GET ${url}: ${res.status}`, res.status);
  }
  return res;
}

class Fetcher5 extends BaseFetcher5 {
  constructor(private readonly headers: Record<string, string>) {
    super();
  }
  override async fetch(url: string): Promise<ReadableStream<Uint8Array<ArrayBuffer>>> {
    const res = await get(url, this.headers, (m, s) => new DownloadHTTPError5(m, s));
    return res.body as ReadableStream<Uint8Array<ArrayBuffer>>;
  }
}

class Fetcher4 extends BaseFetcher4 {
  constructor(private readonly headers: Record<string, string>) {
    super();
  }
  override async fetch(url: string): Promise<NodeJS.ReadableStream> {
    const res = await get(url, this.headers, (m, s) => new DownloadHTTPError4(m, s));
    return Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>);
  }
}

const config = { fetchRetries: 0, fetchTimeout: 5000 };

function client5(paths: UpdaterPaths, headers: Record<string, string>): TufClient {
  const updater = () => new Updater5({ ...paths, fetcher: new Fetcher5(headers), config });
  return {
    refresh: () => updater().refresh(),
    fetchTarget: async (path) => {
      const u = updater();
      await u.refresh();
      const info = await u.getTargetInfo(path);
      return info && readFile(await u.downloadTarget(info));
    },
  };
}

function client4(paths: UpdaterPaths, headers: Record<string, string>): TufClient {
  const updater = () => new Updater4({ ...paths, fetcher: new Fetcher4(headers), config });
  return {
    refresh: () => updater().refresh(),
    fetchTarget: async (path) => {
      const u = updater();
      await u.refresh();
      const info = await u.getTargetInfo(path);
      return info && readFile(await u.downloadTarget(info));
    },
  };
}

export const TUF_CLIENTS: TufClientKind[] = [
  {
    name: `tuf-js ${installedVersion('tuf-js')}`,
    version: installedVersion('tuf-js'),
    open: client5,
  },
  {
    name: `tuf-js ${installedVersion('tuf-js-4')}`,
    version: installedVersion('tuf-js-4'),
    open: client4,
  },
];
