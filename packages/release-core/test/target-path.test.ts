import { describe, expect, it } from 'vitest';
import { hashedTargetPath } from '../src/index.js';
import { loadVector } from './helpers/vectors.js';

const cases = loadVector<{ path: string; sha256: string; hashed: string }[]>('target-paths.json');

describe('hashedTargetPath (TUF consistent snapshots)', () => {
  it.each(cases.map((c) => [c.path, c]))('%s', (_p, c) => {
    expect(hashedTargetPath(c.path, c.sha256)).toBe(c.hashed);
  });
});
