/**
 * Version ordering per ecosystem and OSV range matching (docs/vulnerabilities.md), as pure
 * rules: no store, no app. The same rules against the reference tools (dpkg, apk, Maven):
 * versions.test.ts; through the analysis job on each driver: matching.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { ecosystemOrdering, semverOrdering } from '../../../src/resources/vulnerabilities/ordering.js';
import {
  fixedVersions,
  matchAffected,
  orderVersions,
  rangeProblems,
  type AffectedEntry,
  type OsvEvent,
} from '../../../src/resources/vulnerabilities/osv-ranges.js';

const entry = (ecosystem: string, type: 'SEMVER' | 'ECOSYSTEM', ...events: OsvEvent[]): AffectedEntry => ({
  ecosystem,
  versions: [],
  ranges: [{ type, events }],
});

describe('version ordering', () => {
  it('SemVer: numeric fields, a prerelease before its release, a leading v and partial versions read, the unreadable last in given order', () => {
    expect(orderVersions(['1.10.0', 'junk', '1.2.0', 'v1.0', '1.2.0-rc.1', 'also junk', '1.2.0'], semverOrdering())).toEqual([
      'v1.0',
      '1.2.0-rc.1',
      '1.2.0',
      '1.10.0',
      'junk',
      'also junk',
    ]);
  });

  it('PEP 440 for PyPI: dev, pre, final, post', () => {
    expect(orderVersions(['1.0.post1', '1.0', '1.0rc1', '1.0.dev0', '0.9'], ecosystemOrdering('PyPI')!)).toEqual([
      '0.9',
      '1.0.dev0',
      '1.0rc1',
      '1.0',
      '1.0.post1',
    ]);
  });

  it('dpkg for Debian and Ubuntu: the epoch first, a tilde before anything', () => {
    const want = ['2.0~rc1-1', '2.0-1', '2.0-1+deb12u1', '1:0.9-1'];
    expect(orderVersions(['1:0.9-1', '2.0-1+deb12u1', '2.0-1', '2.0~rc1-1'], ecosystemOrdering('Debian')!)).toEqual(want);
    expect(ecosystemOrdering('Ubuntu')).toBe(ecosystemOrdering('Debian'));
  });

  it('an ecosystem with no ordering has none (only the versions list can match it)', () => {
    expect(ecosystemOrdering('Hex')).toBeUndefined();
  });
});

describe('OSV range matching', () => {
  const npm = entry('npm', 'SEMVER', { introduced: '1.0.0' }, { fixed: '1.4.2' });

  it('introduced is inclusive, fixed exclusive; the fix is named', () => {
    expect(matchAffected('1.0.0', npm)).toEqual({
      affected: true,
      match: { how: 'range', range_type: 'SEMVER', ordering: 'semver', introduced: '1.0.0', fixed: '1.4.2', last_affected: null },
      fixed_versions: ['1.4.2'],
    });
    expect(matchAffected('1.4.1', npm).affected).toBe(true);
    expect(matchAffected('1.4.2', npm)).toEqual({ affected: false, unsupported: false });
    expect(matchAffected('0.9.9', npm)).toEqual({ affected: false, unsupported: false });
  });

  it('last_affected is inclusive; introduced "0" is the start of time', () => {
    const e = entry('npm', 'SEMVER', { introduced: '0' }, { last_affected: '2.0.0' });
    expect(matchAffected('0.0.1', e)).toMatchObject({ affected: true, match: { introduced: '0', last_affected: '2.0.0' }, fixed_versions: [] });
    expect(matchAffected('2.0.0', e).affected).toBe(true);
    expect(matchAffected('2.0.1', e).affected).toBe(false);
  });

  it('of two release lines, only the fix of the line that holds the version is named', () => {
    const e = entry('PyPI', 'ECOSYSTEM', { introduced: '1.0' }, { fixed: '1.2.5' }, { introduced: '2.0' }, { fixed: '2.1.1' });
    expect(matchAffected('2.0.3', e)).toMatchObject({
      affected: true,
      match: { ordering: 'pep440', introduced: '2.0', fixed: '2.1.1' },
      fixed_versions: ['2.1.1'],
    });
    expect(matchAffected('1.3', e).affected).toBe(false);
    expect(fixedVersions(e)).toEqual(['1.2.5', '2.1.1']);
  });

  it('the versions list is the first rule; a listed version no interval holds takes the fixes above it', () => {
    const e: AffectedEntry = {
      ecosystem: 'npm',
      versions: ['3.0.0-beta'],
      ranges: [{ type: 'SEMVER', events: [{ introduced: '1.0.0' }, { fixed: '2.0.0' }, { introduced: '2.5.0' }, { fixed: '3.1.0' }] }],
    };
    expect(matchAffected('3.0.0-beta', e)).toEqual({ affected: true, match: { how: 'versions', version: '3.0.0-beta' }, fixed_versions: ['3.1.0'] });
    const listed: AffectedEntry = { ...e, ranges: [{ type: 'SEMVER', events: [{ introduced: '1.0.0' }, { fixed: '2.0.0' }, { fixed: '3.1.0' }] }] };
    expect(matchAffected('3.0.0-beta', listed)).toEqual({ affected: true, match: { how: 'versions', version: '3.0.0-beta' }, fixed_versions: ['3.1.0'] });
  });

  it('an ecosystem without an ordering or an unreadable bound is unsupported, and says why', () => {
    const hex = entry('Hex', 'ECOSYSTEM', { introduced: '1.0.0' }, { fixed: '1.1.0' });
    expect(matchAffected('1.0.5', hex)).toEqual({ affected: false, unsupported: true });
    expect(rangeProblems(hex)).toEqual([{ range_type: 'ECOSYSTEM', reason: 'no version ordering for Hex: only the versions list is matched' }]);
    const bad = entry('npm', 'SEMVER', { introduced: '1.0.0' }, { fixed: 'not-a-version' });
    expect(matchAffected('1.0.5', bad)).toEqual({ affected: false, unsupported: true });
    expect(rangeProblems(bad)).toHaveLength(1);
    expect(rangeProblems(npm)).toEqual([]);
  });
});
