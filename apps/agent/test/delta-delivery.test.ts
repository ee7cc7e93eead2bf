import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { requireTool } from '../../../vitest.shared.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deltaTargetPath, sha256Digest, type Digest } from '@svc/release-core';
import { AgentError, type MemberSpec } from '../src/index.js';
import { deliverMember } from '../src/staging/delta.js';
import { MemoryFetcher } from './helpers/release-fixture.js';
import { tempDir } from './helpers/tools.js';

const haveZstd = requireTool('zstd');

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(() => cleanup());

/** A member and its previous version: 1 MiB, 3 scattered 4 KiB blocks changed. */
function versions(): { old: Buffer; neu: Buffer } {
  const old = randomBytes(1024 * 1024);
  const neu = Buffer.from(old);
  for (const at of [7, 100, 200]) randomBytes(4096).copy(neu, at * 4096);
  return { old, neu };
}

/** A delta the server would make, by the shared argument rules (zstd --patch-from). */
function makeDelta(source: string, target: string, out: string): Buffer {
  execFileSync('zstd', ['-q', '-f', '-T1', '-3', '--long=20', `--patch-from=${source}`, target, '-o', out]);
  return readFileSync(out);
}

/** A fetcher whose signed metadata lists `deltaBytes` under the pair's path; `serve` is what travels (a tamperer may change it). */
class DeltaFetcher extends MemoryFetcher {
  deltaCalls = 0;
  constructor(
    targets: Map<string, Uint8Array>,
    private readonly delta: { listed: Buffer; serve: Buffer; pair: { source: Digest; target: Digest } } | null,
  ) {
    super(targets);
  }
  async fetchDelta(pair: { source: Digest; target: Digest }, destFile: string): Promise<{ length: number } | null> {
    this.deltaCalls++;
    const d = this.delta;
    if (d === null || deltaTargetPath(pair.source, pair.target) !== deltaTargetPath(d.pair.source, d.pair.target)) return null;
    await writeFile(destFile, d.serve);
    // what ChannelTargetFetcher does with TUF's length and sha256
    if (sha256Digest(d.serve) !== sha256Digest(d.listed)) throw new AgentError('DIGEST_MISMATCH', 'delta: bytes do not match the TUF targets metadata');
    return { length: d.listed.length };
  }
}

describe.skipIf(!haveZstd)('delivering a member through a delta', () => {
  async function setup() {
    const { old, neu } = versions();
    const live = join(dir, 'live');
    const target = join(dir, 'new-version');
    await writeFile(live, old);
    await writeFile(target, neu);
    const delta = makeDelta(live, target, join(dir, 'made.zst'));
    const m: MemberSpec = {
      component: 'weights',
      kind: 'model',
      rolloutId: 'r',
      target: 'models/w',
      digest: sha256Digest(neu),
      length: neu.length,
      mediaType: 'x',
    };
    return { old, neu, live, delta, m, source: { digest: sha256Digest(old), path: live } };
  }

  it('rebuilds the signed member from the delta, transferring only the delta', async () => {
    const { neu, delta, m, source } = await setup();
    const f = new DeltaFetcher(new Map([['models/w', neu]]), { listed: delta, serve: delta, pair: { source: source.digest, target: m.digest } });
    const d = await deliverMember(m, { fetcher: f, dir, source });
    expect(d).toEqual({
      component: 'weights',
      method: 'delta',
      bytes_transferred: delta.length,
      full_length: neu.length,
      source_digest: source.digest,
      attempts: 1,
      resumes: 0,
    });
    expect(delta.length).toBeLessThan(neu.length / 10);
    expect(f.calls).toEqual([]);
    expect((await readFile(join(dir, 'weights.staged'))).equals(neu)).toBe(true);
  });

  it('a tampered delta is refused before it is applied, and the full member is downloaded', async () => {
    const { neu, delta, m, source } = await setup();
    const evil = Buffer.from(delta);
    evil[evil.length - 10]! ^= 0xff;
    const f = new DeltaFetcher(new Map([['models/w', neu]]), { listed: delta, serve: evil, pair: { source: source.digest, target: m.digest } });
    const d = await deliverMember(m, { fetcher: f, dir, source });
    expect(d).toMatchObject({ method: 'full', fallback: 'delta-refused', source_digest: source.digest, bytes_transferred: evil.length + neu.length });
    expect((await readFile(join(dir, 'weights.staged'))).equals(neu)).toBe(true);
  });

  it('a delta that rebuilds other bytes than the signed member falls back to the full download', async () => {
    const { neu, live, m, source } = await setup();
    // signed metadata lists it, it applies cleanly, but it rebuilds something else
    const other = join(dir, 'other');
    await writeFile(other, randomBytes(neu.length));
    const wrong = makeDelta(live, other, join(dir, 'wrong.zst'));
    const f = new DeltaFetcher(new Map([['models/w', neu]]), { listed: wrong, serve: wrong, pair: { source: source.digest, target: m.digest } });
    const d = await deliverMember(m, { fetcher: f, dir, source });
    expect(d).toMatchObject({ method: 'full', fallback: 'wrong-reconstruction', bytes_transferred: wrong.length + neu.length });
    expect((await readFile(join(dir, 'weights.staged'))).equals(neu)).toBe(true);
  });

  it('a live file that is no longer the recorded source, or garbage zstd cannot apply: full download', async () => {
    const { neu, delta, live, m, source } = await setup();
    const f = new DeltaFetcher(new Map([['models/w', neu]]), { listed: delta, serve: delta, pair: { source: source.digest, target: m.digest } });
    await writeFile(live, randomBytes(1000));
    expect(await deliverMember(m, { fetcher: f, dir, source })).toMatchObject({ method: 'full', fallback: 'source-changed' });

    const { m: m2, source: s2, neu: n2 } = await setup();
    const junk = randomBytes(5000);
    const g = new DeltaFetcher(new Map([['models/w', n2]]), { listed: junk, serve: junk, pair: { source: s2.digest, target: m2.digest } });
    const d = await deliverMember(m2, { fetcher: g, dir: join(dir, 'second'), source: s2 });
    expect(d).toMatchObject({ method: 'full', fallback: 'apply-failed', bytes_transferred: junk.length + n2.length });
  });

  it('no delta offered, or nothing installed: a plain full download without a fallback', async () => {
    const { neu, m, source } = await setup();
    const f = new DeltaFetcher(new Map([['models/w', neu]]), null);
    expect(await deliverMember(m, { fetcher: f, dir, source })).toEqual({
      component: 'weights',
      method: 'full',
      bytes_transferred: neu.length,
      full_length: neu.length,
      attempts: 1,
      resumes: 0,
    });
    expect(f.deltaCalls).toBe(1);
    const g = new DeltaFetcher(new Map([['models/w', neu]]), null);
    await deliverMember(m, { fetcher: g, dir: join(dir, 'b'), source: null });
    expect(g.deltaCalls).toBe(0);
  });
});
