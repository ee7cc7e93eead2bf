import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readTar, tempDir, untar, writeTar } from '../src/index.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir('test-kit')));
afterEach(() => cleanup());

describe('tar', () => {
  const long = `${'d'.repeat(120)}/${'f'.repeat(90)}.json`;
  const entries: [string, string | Buffer][] = [
    ['a.txt', 'alpha\n'],
    ['dir/b.bin', Buffer.alloc(1300, 7)],
    [long, '{}'],
    ['empty', ''],
  ];

  it('writes what GNU tar extracts, byte for byte', async () => {
    await writeFile(join(dir, 'x.tar'), writeTar(entries));
    execFileSync('tar', ['-xf', 'x.tar'], { cwd: dir });
    for (const [name, data] of entries) expect(await readFile(join(dir, name))).toEqual(Buffer.from(data));
  });

  it('reads what GNU tar writes (ustar and pax long names), in order', async () => {
    await writeFile(join(dir, 'long.txt'), 'l');
    execFileSync('mkdir', ['-p', join(dir, 'src', 'deep')]);
    await writeFile(join(dir, 'src', 'deep', 'x'), 'x');
    const longName = 'n'.repeat(130);
    await writeFile(join(dir, 'src', longName), 'pax');
    execFileSync('tar', ['--format=pax', '-cf', 'out.tar', '-C', join(dir, 'src'), 'deep', longName], { cwd: dir });
    const got = readTar(await readFile(join(dir, 'out.tar')));
    expect([...got.keys()]).toEqual(['deep/x', longName]);
    expect(got.get(longName)?.toString()).toBe('pax');
  });

  it('round-trips through untar from bytes and from a stream', async () => {
    const bytes = writeTar(entries, { mtime: 0 });
    const want = new Map(entries.map(([n, d]) => [n, Buffer.from(d)]));
    expect(await untar(bytes)).toEqual(want);
    expect(await untar(Readable.from([bytes.subarray(0, 700), bytes.subarray(700)]))).toEqual(want);
  });

  it('refuses a garbled header and a cut entry', () => {
    const bytes = writeTar([['a', 'x'.repeat(2000)]]);
    const garbled = Buffer.from(bytes);
    garbled[10] = 0x41;
    expect(() => readTar(garbled)).toThrow(/checksum/);
    expect(() => readTar(bytes.subarray(0, 1024))).toThrow(/cut short/);
  });

  it('refuses a path no ustar header can hold', () => {
    expect(() => writeTar([['x'.repeat(101), '']])).toThrow(/does not fit/);
  });
});
