import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { RepositoryServiceClient } from '@svc/device-proto';
import { deltaDescriptorOf, deltaTargetPath, digestHex, hashedTargetPath, LIMITS, type Digest } from '@svc/release-core';
import { Updater, type TargetFile } from 'tuf-js';
import { AgentError, isAgentError } from '../errors.js';
import { crashPoint } from '../state-machine/crash-points.js';
import type { FetchProgress, TargetFetcher } from '../staging/fetcher.js';
import { DOWNLOAD } from '../staging/resume.js';
import { CHANNEL_METADATA_URL, CHANNEL_TARGETS_URL, ChannelFetcher } from './repo-fetcher.js';
import { openRepoStream } from './repo-stream.js';

/**
 * The agent's TargetFetcher: a tuf-js Updater refreshes the tenant's TUF metadata through
 * the device channel (client workflow 5.3-5.6), then target bytes are streamed with
 * RepositoryService.GetFile (ranged, so an interrupted download resumes) and checked against
 * the length and sha256 of the VERIFIED TUF targets metadata. The assignment's digest must
 * equal what TUF says, or nothing is downloaded.
 */
export class ChannelTargetFetcher implements TargetFetcher {
  private readonly fetcher: ChannelFetcher;

  constructor(
    private readonly client: RepositoryServiceClient,
    /** Holds root.json (the trust anchor) and the metadata tuf-js persists. */
    private readonly metadataDir: string,
  ) {
    this.fetcher = new ChannelFetcher(client);
  }

  /** A refreshed Updater (new instance each time: tuf-js Updaters are single-use per refresh). */
  private async refreshed(): Promise<Updater> {
    const updater = new Updater({
      metadataDir: this.metadataDir,
      metadataBaseUrl: CHANNEL_METADATA_URL,
      targetBaseUrl: CHANNEL_TARGETS_URL,
      fetcher: this.fetcher,
      config: { fetchRetries: 0 },
    });
    try {
      await updater.refresh();
    } catch (cause) {
      throw new AgentError('FETCH_FAILED', `TUF refresh failed: ${(cause as Error).message}`, { cause, field: 'tuf' });
    }
    return updater;
  }

  private async info(path: string): Promise<{ info: TargetFile; repoPath: string }> {
    const info = await (await this.refreshed()).getTargetInfo(path);
    if (info === undefined) throw new AgentError('FETCH_FAILED', `target ${path}: not in the signed TUF targets`, { field: path });
    const sha = info.hashes.sha256;
    if (sha === undefined) throw new AgentError('FETCH_FAILED', `target ${path}: TUF lists no sha256`, { field: path });
    // consistent snapshots: targets are served under <dir>/<sha256>.<name>
    return { info, repoPath: `targets/${hashedTargetPath(path, sha)}` };
  }

  async fetchTarget(path: string, expected: { digest: Digest; length: number }, destFile: string, resumeFrom: number, progress?: FetchProgress): Promise<void> {
    const { info, repoPath } = await this.info(path);
    // TUF is the authority on bytes: the assignment must agree with the signed metadata
    if (info.length !== expected.length || info.hashes.sha256 !== digestHex(expected.digest)) {
      throw new AgentError(
        'DIGEST_MISMATCH',
        `target ${path}: TUF says ${info.length} bytes sha256:${info.hashes.sha256}, assignment says ${expected.length} ${expected.digest}`,
        { field: path },
      );
    }
    await this.download(path, info, repoPath, destFile, resumeFrom, progress);
  }

  async fetchDelta(pair: { source: Digest; target: Digest }, destFile: string, resumeFrom = 0, progress?: FetchProgress): Promise<{ length: number } | null> {
    const path = deltaTargetPath(pair.source, pair.target);
    const info = await (await this.refreshed()).getTargetInfo(path);
    // offered only when the signed metadata lists it for exactly this pair, within the bounds
    if (info === undefined || deltaDescriptorOf(info.custom, pair.source, pair.target) === undefined) return null;
    const sha = info.hashes.sha256;
    if (sha === undefined || info.length > LIMITS.deltaMemberBytes) return null;
    await this.download(path, info, `targets/${hashedTargetPath(path, sha)}`, destFile, resumeFrom, progress);
    return { length: info.length };
  }

  /**
   * Streams a target's bytes into `destFile` from `resumeFrom` (a ranged GetFile), then checks
   * them against TUF's length and sha256. Every DOWNLOAD.checkpointBytes the file is fsynced and
   * `progress` told; a stream that breaks off is checkpointed where it stopped, so the next
   * attempt asks only for the rest.
   */
  private async download(path: string, info: TargetFile, repoPath: string, destFile: string, resumeFrom: number, progress?: FetchProgress): Promise<void> {
    const have = await stat(destFile).then(
      (s) => s.size,
      () => 0,
    );
    let at = Math.min(resumeFrom, have);
    if (at < info.length) {
      const handle = await open(destFile, at === 0 ? 'w' : 'r+');
      let synced = at;
      const checkpoint = async () => {
        await handle.sync();
        synced = at;
        await progress?.checkpoint(at);
      };
      try {
        const { first, rest } = await openRepoStream(this.client, repoPath, at).catch((cause: unknown) => {
          throw new AgentError('FETCH_FAILED', `target ${path}: ${(cause as Error).message}`, { cause, field: path });
        });
        const write = async (data: Uint8Array) => {
          if (at + data.length > info.length) throw new AgentError('DIGEST_MISMATCH', `target ${path}: longer than ${info.length} bytes`, { field: path });
          await handle.write(data, 0, data.length, at);
          at += data.length;
        };
        await write(first.data);
        if (at < info.length) {
          // the first bytes of an attempt are durable at once: a restart asks only for the rest
          await checkpoint();
          crashPoint('mid-download');
        }
        for await (const m of rest as AsyncIterable<{ data: Buffer }>) {
          await write(m.data);
          if (at - synced >= DOWNLOAD.checkpointBytes && at < info.length) await checkpoint();
        }
        await handle.truncate(at);
        await handle.sync();
      } catch (err) {
        // what arrived before the stream broke off is kept for the next attempt (never bytes
        // that overran the signed length); a checkpoint that cannot be written leaves the last one
        if (at > synced && !isAgentError(err, 'DIGEST_MISMATCH')) await checkpoint().catch(() => undefined);
        throw err;
      } finally {
        await handle.close();
      }
    }
    try {
      await info.verify(createReadStream(destFile));
    } catch (cause) {
      throw new AgentError('DIGEST_MISMATCH', `target ${path}: bytes do not match the TUF targets metadata`, { cause, field: path });
    }
  }

  /** A small target (the release envelope) into memory, verified against TUF. */
  async fetchBytes(path: string, maxBytes: number): Promise<Uint8Array> {
    const { info, repoPath } = await this.info(path);
    if (info.length > maxBytes) throw new AgentError('FETCH_FAILED', `target ${path}: ${info.length} bytes, limit ${maxBytes}`, { field: path });
    const { first, rest } = await openRepoStream(this.client, repoPath);
    const parts: Buffer[] = [first.data];
    let n = first.data.length;
    for await (const m of rest as AsyncIterable<{ data: Buffer }>) {
      n += m.data.length;
      if (n > info.length) throw new AgentError('DIGEST_MISMATCH', `target ${path}: longer than TUF says`, { field: path });
      parts.push(m.data);
    }
    const bytes = Buffer.concat(parts);
    try {
      await info.verify(Readable.from([bytes]));
    } catch (cause) {
      throw new AgentError('DIGEST_MISMATCH', `target ${path}: bytes do not match the TUF targets metadata`, { cause, field: path });
    }
    return new Uint8Array(bytes);
  }
}
