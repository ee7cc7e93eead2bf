import { spawn } from 'node:child_process';
import { open, readdir, stat } from 'node:fs/promises';
import { basename, isAbsolute, join, normalize } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { AgentError } from '../errors.js';

/**
 * What a log bundle may hold (SVC_AGENT_LOG_*). Every source is cut to the time window and
 * to its share of `maxBytes`, keeping the newest bytes; at most `maxFiles` files are read.
 */
export interface LogBundleSettings {
  /** SVC_AGENT_LOG_UNIT: the systemd unit whose journald entries are collected. */
  unit: string;
  /** SVC_AGENT_LOG_JOURNAL_DIR: read journal files from this directory instead of the system journal. */
  journalDir: string | null;
  /** SVC_AGENT_LOG_FILES: absolute paths of files or directories (their regular files, newest first). */
  files: string[];
  /** SVC_AGENT_LOG_MAX_BYTES: log bytes in one bundle, all sources together (before compression). */
  maxBytes: number;
  /** SVC_AGENT_LOG_MAX_FILES: files taken from SVC_AGENT_LOG_FILES. */
  maxFiles: number;
  /** SVC_AGENT_LOG_WINDOW_S: only what was logged (journald) or written (files) this long before the request. */
  windowS: number;
}

export const LOG_BUNDLE_CONTENT_TYPE = 'application/gzip';
export const LOG_BUNDLE_FORMAT = 'svc.log-bundle.v1';
/** The server refuses bundles above 16 MiB; the compressed bundle of 8 MiB of logs stays below. */
const MAX_BYTES_LIMIT = 8 * 1024 * 1024;
const MAX_FILES_LIMIT = 64;
const MAX_WINDOW_S = 30 * 86_400;
const UNIT = /^[A-Za-z0-9:_.@-]{1,256}$/;
const JOURNALCTL_TIMEOUT_MS = 30_000;

function integerSetting(env: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number, problems: string[]): number {
  const raw = env[name] ?? '';
  if (raw === '') return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max) {
    problems.push(`${name}: must be an integer ${min}..${max}`);
    return fallback;
  }
  return n;
}

/** Reads SVC_AGENT_LOG_*; every bad setting named at once (CONFIG_INVALID). */
export function logBundleSettings(env: Record<string, string | undefined> = process.env): LogBundleSettings {
  const problems: string[] = [];
  const unit = env.SVC_AGENT_LOG_UNIT || 'svc-agent.service';
  if (!UNIT.test(unit)) problems.push('SVC_AGENT_LOG_UNIT: must be a systemd unit name');
  const journalDir = env.SVC_AGENT_LOG_JOURNAL_DIR || null;
  if (journalDir !== null && !isAbsolute(journalDir)) problems.push('SVC_AGENT_LOG_JOURNAL_DIR: must be an absolute path');
  const files = (env.SVC_AGENT_LOG_FILES ?? '')
    .split(',')
    .map((f) => f.trim())
    .filter((f) => f !== '');
  for (const f of files) {
    if (!isAbsolute(f)) problems.push(`SVC_AGENT_LOG_FILES: ${JSON.stringify(f)} is not an absolute path`);
  }
  const maxBytes = integerSetting(env, 'SVC_AGENT_LOG_MAX_BYTES', 2 * 1024 * 1024, 4096, MAX_BYTES_LIMIT, problems);
  const maxFiles = integerSetting(env, 'SVC_AGENT_LOG_MAX_FILES', 8, 1, MAX_FILES_LIMIT, problems);
  const windowS = integerSetting(env, 'SVC_AGENT_LOG_WINDOW_S', 86_400, 60, MAX_WINDOW_S, problems);
  if (problems.length > 0) {
    throw new AgentError('CONFIG_INVALID', `invalid log bundle settings: ${problems.join('; ')}`, {
      field: [...new Set(problems.map((p) => p.split(':')[0]))].join(','),
    });
  }
  return { unit, journalDir, files: files.map((f) => normalize(f)), maxBytes, maxFiles, windowS };
}

/** One source as the bundle's manifest.json describes it. */
export interface SourceRecord {
  source: 'journald' | 'file';
  /** journald: the unit; file: the absolute path. */
  name: string;
  /** The tar entry holding it; absent when nothing was taken. */
  entry?: string;
  bytes: number;
  /** Older bytes were dropped to stay within the bundle's size cap. */
  truncated: boolean;
  /** Why nothing was taken (not found, outside the window, over the file count, journalctl missing...). */
  skipped?: string;
}

export interface LogBundleManifest {
  format: typeof LOG_BUNDLE_FORMAT;
  device: string;
  log_request: string;
  created_at: string;
  window: { since: string; until: string };
  limits: { max_bytes: number; max_files: number };
  sources: SourceRecord[];
}

export interface LogBundle {
  contentType: typeof LOG_BUNDLE_CONTENT_TYPE;
  /** tar.gz: manifest.json, then journal.log and files/<n>-<name> in manifest order. */
  bytes: Uint8Array;
  manifest: LogBundleManifest;
}

/** Keeps the last `max` bytes of a stream; `dropped` counts what went. */
class Tail {
  private chunks: Buffer[] = [];
  private length = 0;
  dropped = 0;
  constructor(private readonly max: number) {}

  push(b: Buffer): void {
    this.chunks.push(b);
    this.length += b.length;
    while (this.chunks.length > 1 && this.length - this.chunks[0]!.length >= this.max) {
      this.length -= this.chunks[0]!.length;
      this.dropped += this.chunks.shift()!.length;
    }
  }

  bytes(): Buffer {
    const all = Buffer.concat(this.chunks);
    if (all.length <= this.max) return all;
    this.dropped += all.length - this.max;
    return all.subarray(all.length - this.max);
  }
}

/** A cut tail starts mid-line: drop the partial first line so every line is whole. */
function wholeLines(b: Buffer, truncated: boolean): Buffer {
  if (!truncated) return b;
  const nl = b.indexOf(0x0a);
  return nl < 0 ? Buffer.alloc(0) : b.subarray(nl + 1);
}

/** `journalctl` for the unit and window, newest `max` bytes. */
function readJournal(s: LogBundleSettings, since: Date, until: Date, max: number): Promise<{ bytes: Buffer; truncated: boolean } | { skipped: string }> {
  const args = [
    ...(s.journalDir !== null ? ['--directory', s.journalDir] : []),
    '--unit',
    s.unit,
    '--since',
    `@${Math.floor(since.getTime() / 1000)}`,
    '--until',
    `@${Math.ceil(until.getTime() / 1000)}`,
    '--output',
    'short-iso',
    '--no-pager',
    '--quiet',
  ];
  return new Promise((resolve) => {
    const child = spawn('journalctl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = new Tail(max);
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), JOURNALCTL_TIMEOUT_MS);
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => {
      if (err.length < 4096) err += d.toString('utf8');
    });
    child.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ skipped: e.code === 'ENOENT' ? 'journalctl not found (no journald on this device)' : `journalctl: ${e.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) {
        resolve({ skipped: `journalctl exited ${code ?? signal}: ${err.trim().split('\n')[0] ?? ''}`.trim() });
        return;
      }
      const bytes = out.bytes();
      resolve({ bytes: wholeLines(bytes, out.dropped > 0), truncated: out.dropped > 0 });
    });
  });
}

/** The newest `max` bytes of a file. */
async function readTail(path: string, size: number, max: number): Promise<{ bytes: Buffer; truncated: boolean }> {
  const h = await open(path, 'r');
  try {
    const start = Math.max(0, size - max);
    const buf = Buffer.alloc(Math.min(size, max));
    const { bytesRead } = await h.read(buf, 0, buf.length, start);
    return { bytes: wholeLines(buf.subarray(0, bytesRead), start > 0), truncated: start > 0 };
  } finally {
    await h.close();
  }
}

interface FileCandidate {
  path: string;
  size: number;
  mtime: Date;
}

/** The configured paths as regular files; a directory contributes its regular files, newest first. */
async function fileCandidates(paths: string[], skip: (name: string, why: string) => void): Promise<FileCandidate[]> {
  const out: FileCandidate[] = [];
  for (const p of paths) {
    let st;
    try {
      st = await stat(p);
    } catch (e) {
      skip(p, (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'not found' : `cannot read: ${(e as Error).message}`);
      continue;
    }
    if (st.isFile()) {
      out.push({ path: p, size: st.size, mtime: st.mtime });
    } else if (st.isDirectory()) {
      const inDir: FileCandidate[] = [];
      for (const name of (await readdir(p)).sort()) {
        const f = join(p, name);
        const fst = await stat(f).catch(() => undefined);
        if (fst?.isFile()) inDir.push({ path: f, size: fst.size, mtime: fst.mtime });
      }
      out.push(...inDir.sort((a, b) => b.mtime.getTime() - a.mtime.getTime()));
    } else {
      skip(p, 'not a regular file or directory');
    }
  }
  return out;
}

/** One ustar header block (POSIX.1-1988) for a regular file. */
function tarHeader(name: string, size: number, mtime: Date): Buffer {
  const h = Buffer.alloc(512);
  const put = (s: string, at: number, len: number) => h.write(s, at, len, 'utf8');
  const octal = (n: number, len: number) => n.toString(8).padStart(len - 1, '0');
  put(name, 0, 100);
  put(octal(0o644, 8), 100, 8);
  put(octal(0, 8), 108, 8);
  put(octal(0, 8), 116, 8);
  put(octal(size, 12), 124, 12);
  put(octal(Math.floor(mtime.getTime() / 1000), 12), 136, 12);
  put('        ', 148, 8);
  put('0', 156, 1);
  put('ustar\u000000', 257, 8);
  let sum = 0;
  for (const b of h) sum += b;
  put(`${octal(sum, 7)}\u0000`, 148, 8);
  return h;
}

function tar(entries: { name: string; bytes: Uint8Array }[], mtime: Date): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    parts.push(tarHeader(e.name, e.bytes.length, mtime), Buffer.from(e.bytes));
    const pad = (512 - (e.bytes.length % 512)) % 512;
    if (pad > 0) parts.push(Buffer.alloc(pad));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

/** ustar names hold 100 bytes: `files/<n>-<file name>`; the full path is in manifest.json. */
function entryName(n: number, path: string): string {
  return `files/${n}-${basename(path).replace(/[^A-Za-z0-9._-]/g, '_')}`.slice(0, 100);
}

/**
 * Collects one log bundle: journald entries of the agent's unit (when journalctl is there)
 * and the configured files, each cut to the time window and to its share of the size cap
 * (a source that needs less leaves the rest to the ones after it), as a tar.gz whose
 * manifest.json says what was taken, cut or skipped and why.
 */
export async function collectLogBundle(s: LogBundleSettings, ctx: { device: string; logRequest: string; now?: Date }): Promise<LogBundle> {
  const until = ctx.now ?? new Date();
  const since = new Date(until.getTime() - s.windowS * 1000);
  const sources: SourceRecord[] = [];
  const entries: { name: string; bytes: Uint8Array }[] = [];
  const skip = (name: string, why: string) => sources.push({ source: 'file', name, bytes: 0, truncated: false, skipped: why });
  const candidates = await fileCandidates(s.files, skip);
  const taken: FileCandidate[] = [];
  for (const c of candidates) {
    if (c.mtime < since) skip(c.path, 'not written within the window');
    else if (taken.length >= s.maxFiles) skip(c.path, `over the file count cap (${s.maxFiles})`);
    else taken.push(c);
  }
  let budget = s.maxBytes;
  let left = taken.length + 1;
  const share = () => Math.floor(budget / left--);
  const journal = await readJournal(s, since, until, share());
  if ('skipped' in journal) {
    sources.unshift({ source: 'journald', name: s.unit, bytes: 0, truncated: false, skipped: journal.skipped });
  } else {
    budget -= journal.bytes.length;
    entries.push({ name: 'journal.log', bytes: journal.bytes });
    sources.unshift({ source: 'journald', name: s.unit, entry: 'journal.log', bytes: journal.bytes.length, truncated: journal.truncated });
  }
  for (const [i, c] of taken.entries()) {
    const max = share();
    try {
      const { bytes, truncated } = await readTail(c.path, c.size, max);
      budget -= bytes.length;
      const name = entryName(i + 1, c.path);
      entries.push({ name, bytes });
      sources.push({ source: 'file', name: c.path, entry: name, bytes: bytes.length, truncated });
    } catch (e) {
      skip(c.path, `cannot read: ${(e as Error).message}`);
    }
  }
  const manifest: LogBundleManifest = {
    format: LOG_BUNDLE_FORMAT,
    device: ctx.device,
    log_request: ctx.logRequest,
    created_at: until.toISOString(),
    window: { since: since.toISOString(), until: until.toISOString() },
    limits: { max_bytes: s.maxBytes, max_files: s.maxFiles },
    sources,
  };
  const archive = tar([{ name: 'manifest.json', bytes: Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`) }, ...entries], until);
  return { contentType: LOG_BUNDLE_CONTENT_TYPE, bytes: new Uint8Array(await promisify(gzip)(archive)), manifest };
}
