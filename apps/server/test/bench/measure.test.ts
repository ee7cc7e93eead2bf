import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

// bench/measure.mjs is plain ESM without types, shared by the server's benches
const MEASURE = pathToFileURL(resolve(import.meta.dirname, '../../bench/measure.mjs')).href;
interface Measure {
  meanOf: (samples: number[], what: string) => number;
  measured: (ok: boolean, why: string) => void;
}

/** `body` run as a bench process through benchMain: its exit status, stdout and stderr. */
function bench(body: string): { status: number | null; stdout: string; stderr: string } {
  const script = `import { benchMain, measured, meanOf } from '${MEASURE}';\nawait benchMain('probe', async () => {\n${body}\n});`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('bench/measure.mjs', () => {
  it('averages samples and refuses to average none or a non-number', async () => {
    const { meanOf, measured } = (await import(MEASURE)) as Measure;
    expect(meanOf([2, 4, 9], 'pings/s')).toBe(5);
    expect(() => meanOf([], 'pings/s')).toThrow(/^pings\/s: no sample$/);
    expect(() => meanOf([1, Number.NaN], 'ratio')).toThrow(/^ratio: a sample is not a number \(1, NaN\)$/);
    expect(() => measured(true, 'x')).not.toThrow();
    expect(() => measured(false, 'enrolled 0 of 5 devices')).toThrow('enrolled 0 of 5 devices');
  });

  it('exits 0 when the bench measured, even with a target not met', () => {
    expect(bench(`console.log('rate 10/s (target >= 20: NOT MET)');`)).toEqual({ status: 0, stdout: 'rate 10/s (target >= 20: NOT MET)\n', stderr: '' });
  });

  it('exits 1 naming the reason on stderr when it could not measure', () => {
    expect(bench(`console.log('phase 1'); measured(false, 'check-ins: 3 of 10 calls failed');`)).toEqual({
      status: 1,
      stdout: 'phase 1\n',
      stderr: 'probe bench: could not measure: check-ins: 3 of 10 calls failed\n',
    });
    expect(bench(`meanOf([], 'pings/s');`)).toMatchObject({ status: 1, stderr: 'probe bench: could not measure: pings/s: no sample\n' });
    // anything else thrown (a server that did not start) exits 1 too, with its stack
    const crash = bench(`throw new Error('server exited 1 before listening');`);
    expect(crash.status).toBe(1);
    expect(crash.stderr).toMatch(/^probe bench: could not measure: server exited 1 before listening\nError: server exited 1 before listening\n\s+at /);
  });
});
