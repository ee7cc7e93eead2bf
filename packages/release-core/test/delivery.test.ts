import { describe, expect, it } from 'vitest';
import {
  LIMITS,
  ReleaseError,
  deltaDescriptorOf,
  deltaEligible,
  deltaTargetPath,
  deltaWindowLog,
  digestFromHex,
  validateDeliveryReport,
  zstdDeltaArgs,
} from '../src/index.js';

const A = digestFromHex('a'.repeat(64));
const B = digestFromHex('b'.repeat(64));

describe('delta targets', () => {
  it('names the delta by its target and source digests', () => {
    expect(deltaTargetPath(A, B)).toBe(`deltas/${'b'.repeat(64)}/${'a'.repeat(64)}.zst`);
  });

  it('accepts a descriptor only for exactly the source and target asked for', () => {
    const custom = { delta: { format: 'zstd-patch-from', source_digest: A, target_digest: B, target_length: 10 } };
    expect(deltaDescriptorOf(custom, A, B)).toEqual(custom.delta);
    expect(deltaDescriptorOf(custom, B, A)).toBeUndefined();
    expect(deltaDescriptorOf({ delta: { ...custom.delta, format: 'bsdiff' } }, A, B)).toBeUndefined();
    expect(deltaDescriptorOf({ delta: { ...custom.delta, target_length: -1 } }, A, B)).toBeUndefined();
    expect(deltaDescriptorOf({ media_type: 'x' }, A, B)).toBeUndefined();
    expect(deltaDescriptorOf(undefined, A, B)).toBeUndefined();
  });

  it('bounds members and the window by LIMITS', () => {
    expect(deltaEligible(1, LIMITS.deltaMemberBytes)).toBe(true);
    expect(deltaEligible(LIMITS.deltaMemberBytes + 1, 1)).toBe(false);
    expect(deltaEligible(0, 1)).toBe(false);
    expect(deltaWindowLog(64 * 1024 * 1024, 1000)).toBe(26);
    expect(deltaWindowLog(64 * 1024 * 1024 + 1, 1000)).toBe(27);
    expect(deltaWindowLog(10, 10)).toBe(20);
    expect(deltaWindowLog(LIMITS.deltaMemberBytes * 4, 1)).toBe(LIMITS.deltaWindowLog);
  });

  it('gives both sides of zstd the same window rules', () => {
    const files = { source: '/s', input: '/i', output: '/o' };
    expect(zstdDeltaArgs('create', files, { sourceLength: 64 * 1024 * 1024, targetLength: 1 })).toEqual([
      '-q',
      '-f',
      '-T1',
      `-${LIMITS.deltaZstdLevel}`,
      '--long=26',
      '--patch-from=/s',
      '/i',
      '-o',
      '/o',
    ]);
    const apply = zstdDeltaArgs('apply', files);
    expect(apply).toContain(`--memory=${LIMITS.deltaDecoderMemoryMiB}MB`);
    expect(apply).toContain(`--long=${LIMITS.deltaWindowLog}`);
    expect(apply).toContain('-d');
  });
});

describe('validateDeliveryReport', () => {
  it('accepts full, delta and fallback members', () => {
    const report = {
      members: [
        { component: 'model', method: 'delta', bytes_transferred: 10, full_length: 1000, source_digest: A },
        { component: 'cfg', method: 'full', bytes_transferred: 1010, full_length: 1000, source_digest: A, fallback: 'delta-refused' },
        { component: 'bin', method: 'full', bytes_transferred: 5, full_length: 5 },
      ],
    };
    expect(validateDeliveryReport(report)).toEqual(report);
  });

  it('accepts resumed and failed downloads: attempts, resumes, a failure code and its detail', () => {
    const report = {
      members: [
        { component: 'model', method: 'full', bytes_transferred: 1000, full_length: 1000, attempts: 3, resumes: 2 },
        {
          component: 'cfg',
          method: 'full',
          bytes_transferred: 400,
          full_length: 1000,
          attempts: 4,
          resumes: 3,
          failure: 'DOWNLOAD_RETRIES_EXHAUSTED',
          failure_detail: 'full download: 3 attempts in a row without progress (bound 3)',
        },
      ],
    };
    expect(validateDeliveryReport(report)).toEqual(report);
  });

  it('names bad resume fields: attempts below 1, negative resumes, a failure that is not a code, a detail without a code or too long', () => {
    let err: unknown;
    try {
      validateDeliveryReport({
        members: [
          { component: 'a', method: 'full', bytes_transferred: 1, full_length: 1, attempts: 0, resumes: -1 },
          { component: 'b', method: 'full', bytes_transferred: 1, full_length: 1, failure: 'link died' },
          { component: 'c', method: 'full', bytes_transferred: 1, full_length: 1, failure_detail: 'why' },
          { component: 'd', method: 'full', bytes_transferred: 1, full_length: 1, failure: 'X_Y', failure_detail: 'x'.repeat(201) },
        ],
      });
    } catch (e) {
      err = e;
    }
    expect((err as ReleaseError).code).toBe('DELIVERY_INVALID');
    expect(((err as ReleaseError).issues ?? []).map((i) => i.path).sort()).toEqual(
      ['members[0].attempts', 'members[0].resumes', 'members[1].failure', 'members[2].failure_detail', 'members[3].failure_detail'].sort(),
    );
  });

  it('names every bad field at once', () => {
    let err: unknown;
    try {
      validateDeliveryReport({
        members: [
          { component: 'model', method: 'delta', bytes_transferred: -1, full_length: 1 },
          { component: 'model', method: 'teleport', bytes_transferred: 1, full_length: 1, extra: 1 },
          { component: 'x', method: 'delta', bytes_transferred: 1, full_length: 1, source_digest: A, fallback: 'apply-failed' },
        ],
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ReleaseError);
    expect((err as ReleaseError).code).toBe('DELIVERY_INVALID');
    const paths = ((err as ReleaseError).issues ?? []).map((i) => i.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'members[0].bytes_transferred',
        'members[0].source_digest',
        'members[1].component',
        'members[1].method',
        'members[1].extra',
        'members[2].fallback',
      ]),
    );
  });

  it('refuses an empty or missing member list', () => {
    expect(() => validateDeliveryReport({ members: [] })).toThrow(/members: must not be empty/);
    expect(() => validateDeliveryReport(null)).toThrow(/DELIVERY|delivery/);
  });
});
