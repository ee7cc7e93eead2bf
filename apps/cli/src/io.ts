import { open, writeFile, chmod, lstat } from 'node:fs/promises';
import { CliError } from './errors.js';

/** Byte caps per input kind: every file on the command line is untrusted input. */
export const MAX_BYTES = {
  // A PEM key or certificate is a few hundred bytes; a CA bundle a few KiB.
  pem: 64 * 1024,
  // release-core applies its own, tighter envelope cap after reading.
  document: 16 * 1024 * 1024,
} as const;

function describe(code: string | undefined): string {
  switch (code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'is a directory';
    default:
      return code ?? 'cannot read';
  }
}

/**
 * Reads one input file named on the command line. A path that cannot be read is a
 * usage error (exit 2: the operator named the wrong file); a file over the cap is
 * refused (exit 1) without reading it whole.
 */
export async function readInput(path: string, what: string, maxBytes: number): Promise<Uint8Array> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (e) {
    throw new CliError('INPUT_UNREADABLE', `${what} ${path}: ${describe((e as NodeJS.ErrnoException).code)}`, { cause: e });
  }
  try {
    const st = await handle.stat();
    if (st.isDirectory()) throw new CliError('INPUT_UNREADABLE', `${what} ${path}: is a directory`);
    // Read at most one byte past the cap so a growing or special file cannot exhaust memory.
    const buf = Buffer.alloc(Math.min(st.isFile() ? st.size : maxBytes, maxBytes) + 1);
    let total = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, total, buf.length - total, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total === buf.length) break;
    }
    if (total > maxBytes) throw new CliError('INPUT_TOO_LARGE', `${what} ${path}: larger than ${maxBytes} bytes`);
    return new Uint8Array(buf.buffer, buf.byteOffset, total);
  } catch (e) {
    if (e instanceof CliError) throw e;
    throw new CliError('INPUT_UNREADABLE', `${what} ${path}: ${describe((e as NodeJS.ErrnoException).code)}`, { cause: e });
  } finally {
    await handle.close();
  }
}

export async function readText(path: string, what: string, maxBytes: number): Promise<string> {
  const bytes = await readInput(path, what, maxBytes);
  return new TextDecoder('utf-8', { fatal: false }).decode(bytes);
}

/** Reads and parses a JSON document; a file that is not JSON is refused (exit 1). */
export async function readJson(path: string, what: string): Promise<unknown> {
  const bytes = await readInput(path, what, MAX_BYTES.document);
  try {
    // fatal: a document that is not UTF-8 is refused, never silently repaired.
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new CliError('INPUT_NOT_JSON', `${what} ${path}: not JSON (${(e as Error).message})`, { cause: e });
  }
}

/**
 * Writes one output file. `exclusive` refuses to replace an existing file (keys are
 * never silently overwritten); `mode` is applied even when an existing file is replaced.
 */
export async function writeOutput(path: string, data: string | Uint8Array, opts: { exclusive: boolean; mode?: number }): Promise<void> {
  try {
    await writeFile(path, data, { flag: opts.exclusive ? 'wx' : 'w', mode: opts.mode ?? 0o644 });
    // writeFile's mode only applies when it creates the file.
    if (opts.mode !== undefined) await chmod(path, opts.mode);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'EEXIST' ? 'already exists (use --force to replace it)' : describe(code);
    throw new CliError('OUTPUT_FAILED', `cannot write ${path}: ${why}`, { cause: e });
  }
}

/** Refuses (OUTPUT_FAILED) when any of the paths exists, before anything is written. */
export async function assertAbsent(paths: readonly string[]): Promise<void> {
  for (const path of paths) {
    const exists = await lstat(path).then(
      () => true,
      (e: NodeJS.ErrnoException) => e.code !== 'ENOENT',
    );
    if (exists) throw new CliError('OUTPUT_FAILED', `cannot write ${path}: already exists (use --force to replace it)`);
  }
}
