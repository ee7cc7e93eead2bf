/**
 * Version orderings against the ecosystems' own references: dpkg's ordering against
 * `dpkg --compare-versions` (and dpkg's documented cases), apk's against apk-tools' own test
 * data, Maven's against Maven's ComparableVersion run by java; npm SemVer prereleases and
 * PEP 440 post/dev releases hand-verified; OSV range evaluation (introduced, fixed,
 * last_affected, limit, versions lists).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requireTool } from '../../../../../vitest.shared.js';
import { compareApk, isApkVersion } from '../../../src/resources/vulnerabilities/apk-version.js';
import { compareDpkg, parseDpkgVersion } from '../../../src/resources/vulnerabilities/dpkg-version.js';
import { compareMaven } from '../../../src/resources/vulnerabilities/maven-version.js';
import { ecosystemOrdering } from '../../../src/resources/vulnerabilities/ordering.js';
import { fixedVersions, matchAffected, rangeProblems, type AffectedEntry } from '../../../src/resources/vulnerabilities/osv-ranges.js';

const sign = (n: number) => (n < 0 ? '<' : n > 0 ? '>' : '=');

// dpkg's own documented cases (deb-version(7), lib/dpkg/t/t-version.c) and tricky epochs/tildes
const DPKG_CASES: [string, string, string][] = [
  ['1.0~rc1', '<', '1.0'],
  ['1.0~~', '<', '1.0~'],
  ['1.0~~a', '<', '1.0~'],
  ['1.0~', '<', '1.0'],
  ['1.0', '<', '1.0a'],
  ['1.0a', '<', '1.0+1'],
  ['0:1.0', '=', '1.0'],
  ['1.0', '=', '1.0-0'],
  ['1:0.1', '>', '9.9'],
  ['2:1.0', '>', '1:9.9'],
  ['1.0-1', '<', '1.0-1+b1'],
  ['1.0-1~bpo1', '<', '1.0-1'],
  ['7.74.0-1.3+deb11u7', '>', '7.74.0-1.3+deb11u3'],
  ['7.74.0-1.3+deb11u10', '>', '7.74.0-1.3+deb11u9'],
  ['1.2.3-1ubuntu0.1', '>', '1.2.3-1'],
  ['1.00', '=', '1.0'],
  ['1.001', '>', '1.0'],
];
const DPKG_CORPUS = [
  '0',
  '0.1',
  '1.0',
  '1.0~rc1',
  '1.0~~',
  '1.0~',
  '1.0a',
  '1.0+1',
  '1.0-1',
  '1.0-1+b1',
  '1.0-1~bpo1',
  '1:0.1',
  '2:1.0',
  '1:9.9',
  '9.9',
  '1.0.0',
  '1.0.1~beta',
  '10.0',
  '1.2.3-1ubuntu0.1',
  '1.2.3-1',
  '2.36-9+deb12u4',
  '2.36-9+deb12u10',
  '3.0.11-1~deb12u2',
  '3.0.11-1',
  '1.0-a',
  '1.0-A',
  '1.0-0.1',
  '1.0+dfsg-1',
  '1.0.dfsg-1',
  '1.0~dfsg-1',
];

describe('dpkg ordering', () => {
  it('agrees with the documented cases', () => {
    for (const [a, op, b] of DPKG_CASES) expect(`${a} ${sign(compareDpkg(parseDpkgVersion(a)!, parseDpkgVersion(b)!))} ${b}`).toBe(`${a} ${op} ${b}`);
  });

  it.skipIf(!requireTool('dpkg'))(
    'agrees with dpkg --compare-versions on every pair of the corpus',
    () => {
      // each unordered pair once (the ordering is antisymmetric: the test of a < b covers b > a),
      // all asked of dpkg by one shell
      const pairs = DPKG_CORPUS.flatMap((a, i) => DPKG_CORPUS.slice(i + 1).map((b) => [a, b] as const));
      const script = pairs
        .map(
          ([a, b]) =>
            `if dpkg --compare-versions '${a}' lt '${b}'; then echo '<'; elif dpkg --compare-versions '${a}' eq '${b}'; then echo '='; else echo '>'; fi`,
        )
        .join('\n');
      const answers = spawnSync('sh', ['-c', script], { encoding: 'utf8', maxBuffer: 1 << 20 })
        .stdout.trim()
        .split('\n');
      expect(answers).toHaveLength(pairs.length);
      const wrong = pairs.flatMap(([a, b], k) => {
        const got = sign(compareDpkg(parseDpkgVersion(a)!, parseDpkgVersion(b)!));
        return got === answers[k] ? [] : [`${a} ${got} ${b} (dpkg: ${answers[k]})`];
      });
      expect(wrong).toEqual([]);
    },
    120_000,
  );

  it('refuses what is not a Debian version', () => {
    for (const v of ['', 'a1.0', 'x:1.0', '1.0 1', '1.0-']) expect(parseDpkgVersion(v), v).toBeUndefined();
  });
});

describe('apk ordering', () => {
  it("agrees with apk-tools' own test/version.data, every case", () => {
    const { cases } = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'vectors', 'apk-version.json'), 'utf8')) as {
      cases: [string, string, string][];
    };
    expect(cases.length).toBeGreaterThan(700);
    const wrong = cases.filter(([a, op, b]) => sign(compareApk(a, b)) !== op).map((c) => c.join(' '));
    expect(wrong).toEqual([]);
  });

  it('validates versions', () => {
    expect(['1.2.3-r0', '1.0_alpha2', '2.4.3_p1-r1', '1.0a'].every(isApkVersion)).toBe(true);
    expect(['', 'abc', '1.0-x', '1.0_foo'].some(isApkVersion)).toBe(false);
  });
});

const MAVEN_CORPUS = [
  '1',
  '1.0',
  '1.0.0',
  '1-0',
  '1-ga',
  '1-final',
  '1-release',
  '1.0-sp',
  '1.0-sp1',
  '1-snapshot',
  '1.0-SNAPSHOT',
  '1-rc1',
  '1-cr1',
  '1-RC2',
  '1-m1',
  '1-milestone-2',
  '1-beta',
  '1-b2',
  '1-alpha',
  '1-a1',
  '1.0.1',
  '1.1',
  '1-1',
  '1.0.0.1',
  '1.0-abc',
  '1.0.abc',
  '1a1',
  '2.0.0-RC1',
  '2.0-alpha-1-SNAPSHOT',
  '10.0',
  '9.9.9',
  '1.0-1-1',
  '1-0.1',
  '1.0.0.RELEASE',
  '2.5.7.Final',
  '1-123456789012345678901234567890',
  '1.0-20240101.123456-1',
  '3.0.0-beta.2',
  '3.0.0-beta-2',
  '1.x',
  '2.17.1',
  '2.15.0',
  '2.0-beta9',
];

function mavenJar(): string | undefined {
  const dir = '/usr/share/maven/lib';
  if (!existsSync(dir)) return undefined;
  const jar = readdirSync(dir).find((f) => f.startsWith('maven-artifact'));
  return jar ? join(dir, jar) : undefined;
}

describe('Maven ordering', () => {
  it('hand-verified cases', () => {
    expect(compareMaven('1.0-alpha-1', '1.0')).toBe(-1);
    expect(compareMaven('1.0-SNAPSHOT', '1.0')).toBe(-1);
    expect(compareMaven('1.0', '1.0-sp')).toBe(-1);
    expect(compareMaven('1.0.0', '1')).toBe(0);
    expect(compareMaven('2.17.1', '2.15.0')).toBe(1);
    expect(compareMaven('2.0-beta9', '2.0')).toBe(-1);
  });

  it.skipIf(!requireTool('java', 'default-jre-headless') || !requireTool('mvn', 'maven'))(
    "agrees with Maven's ComparableVersion on every pair of the corpus",
    () => {
      const jar = mavenJar();
      expect(jar, 'maven-artifact jar under /usr/share/maven/lib').toBeDefined();
      const pairs = MAVEN_CORPUS.flatMap((a) => MAVEN_CORPUS.map((b) => [a, b] as const));
      // ComparableVersion's main compares each argument with the next: a b a c ...
      const out = spawnSync('java', ['-cp', jar!, 'org.apache.maven.artifact.versioning.ComparableVersion', ...pairs.flat()], {
        encoding: 'utf8',
        maxBuffer: 1 << 26,
      }).stdout;
      const lines = out
        .split('\n')
        .filter((l) => /^\s+\S+ (<|>|==) \S+$/.test(l))
        .map((l) => l.trim().split(' ')[1]);
      const wrong: string[] = [];
      pairs.forEach(([a, b], k) => {
        const want = lines[2 * k] === '==' ? '=' : lines[2 * k];
        const got = sign(compareMaven(a, b));
        if (got !== want) wrong.push(`${a} ${got} ${b} (maven: ${want})`);
      });
      expect(lines.length).toBeGreaterThanOrEqual(2 * pairs.length - 1);
      expect(wrong).toEqual([]);
    },
  );
});

describe('npm SemVer and PEP 440', () => {
  const cmp = (eco: string, a: string, b: string) => {
    const o = ecosystemOrdering(eco)!;
    return sign(o.compare(o.parse(a), o.parse(b)));
  };
  it('semver prereleases sort before their release, numerically by identifier', () => {
    expect(cmp('npm', '1.0.0-alpha', '1.0.0')).toBe('<');
    expect(cmp('npm', '1.0.0-alpha.2', '1.0.0-alpha.10')).toBe('<');
    expect(cmp('npm', '1.0.0-beta', '1.0.0-alpha.1')).toBe('>');
    expect(cmp('npm', '1.0.0-rc.1', '1.0.0-rc.1+build.5')).toBe('=');
    expect(cmp('Go', 'v1.2.3', 'v1.10.0')).toBe('<');
  });
  it('a partial SemVer version is completed with zeros, as osv-scanner reads it', () => {
    expect(cmp('npm', '1.0', '1.0.0')).toBe('=');
    expect(cmp('npm', '1', '1.0.0')).toBe('=');
    expect(cmp('npm', '1.2', '1.10.0')).toBe('<');
    expect(cmp('npm', '2.0-rc.1', '2.0.0')).toBe('<');
    expect(cmp('Go', 'v1.2', 'v1.2.0')).toBe('=');
    for (const bad of ['next', '1.x', '1.2.3.4', '', 'v']) expect(ecosystemOrdering('npm')!.parse(bad), bad).toBeUndefined();
  });
  it('PEP 440: dev < pre < release < post; epochs first', () => {
    expect(cmp('PyPI', '1.0.dev1', '1.0a1')).toBe('<');
    expect(cmp('PyPI', '1.0a1', '1.0rc1')).toBe('<');
    expect(cmp('PyPI', '1.0rc1', '1.0')).toBe('<');
    expect(cmp('PyPI', '1.0', '1.0.post1')).toBe('<');
    expect(cmp('PyPI', '1.0.post1.dev1', '1.0.post1')).toBe('<');
    expect(cmp('PyPI', '1!0.1', '2.0')).toBe('>');
    expect(cmp('PyPI', '1.0', '1.0.0')).toBe('=');
  });
});

describe('OSV range evaluation', () => {
  const entry = (ecosystem: string, events: Record<string, string>[], versions: string[] = [], type = 'ECOSYSTEM'): AffectedEntry => ({
    ecosystem,
    versions,
    ranges: [{ type, events }],
  });
  const affected = (v: string, e: AffectedEntry) => matchAffected(v, e).affected;

  it('introduced/fixed intervals, several of them, and last_affected', () => {
    const e = entry('npm', [{ introduced: '1.0.0' }, { fixed: '1.5.0' }, { introduced: '2.0.0' }, { fixed: '2.5.0' }], [], 'SEMVER');
    expect(['0.9.0', '1.0.0', '1.4.9', '1.5.0', '1.7.0', '2.0.0', '2.4.0', '2.5.0'].map((v) => affected(v, e))).toEqual([
      false,
      true,
      true,
      false,
      false,
      true,
      true,
      false,
    ]);
    const last = entry('npm', [{ introduced: '0' }, { last_affected: '3.0.0' }], [], 'SEMVER');
    expect([affected('3.0.0', last), affected('3.0.1', last)]).toEqual([true, false]);
    // semver prerelease of the fix is still affected
    expect(affected('1.5.0-rc.1', e)).toBe(true);
  });

  it('Debian epochs and tildes decide membership', () => {
    const e = entry('Debian', [{ introduced: '0' }, { fixed: '1:2.3-1' }]);
    expect(affected('2.9-1', e)).toBe(true); // no epoch: older than any epoch-1 version
    expect(affected('1:2.3-1~deb12u1', e)).toBe(true); // tilde sorts before the fix
    expect(affected('1:2.3-1', e)).toBe(false);
    expect(affected('1:2.3-1+deb12u1', e)).toBe(false);
  });

  it('PEP 440 post and dev releases', () => {
    const e = entry('PyPI', [{ introduced: '0' }, { fixed: '2.0.1' }]);
    expect(affected('2.0.1.dev3', e)).toBe(true);
    expect(affected('2.0.post1', e)).toBe(true);
    expect(affected('2.0.1', e)).toBe(false);
    expect(affected('2.0.1.post1', e)).toBe(false);
  });

  it('versions lists match exactly; an ecosystem without an ordering matches only by list', () => {
    const e = entry('RubyGems', [{ introduced: '0' }, { fixed: '2.0' }], ['1.5.0']);
    // without an ordering no fix can be shown to be above the installed version: none is named (the record's are, apart)
    expect(matchAffected('1.5.0', e)).toEqual({ affected: true, match: { how: 'versions', version: '1.5.0' }, fixed_versions: [] });
    expect(fixedVersions(e)).toEqual(['2.0']);
    expect(matchAffected('1.6.0', e)).toEqual({ affected: false, unsupported: true });
  });

  it('records how it matched', () => {
    expect(matchAffected('1.2.0', entry('Maven', [{ introduced: '1.0' }, { fixed: '1.2.1' }]))).toEqual({
      affected: true,
      match: { how: 'range', range_type: 'ECOSYSTEM', ordering: 'maven', introduced: '1.0', fixed: '1.2.1', last_affected: null },
      fixed_versions: ['1.2.1'],
    });
  });

  it('limit bounds a range', () => {
    const e = entry('npm', [{ introduced: '0' }, { limit: '2.0.0' }], [], 'SEMVER');
    expect([affected('1.9.9', e), affected('2.0.0', e)]).toEqual([true, false]);
  });

  const fixes = (v: string, e: AffectedEntry) => {
    const m = matchAffected(v, e);
    return m.affected ? m.fixed_versions : undefined;
  };

  it('the fixes of a match are those of the ranges that hold the installed version, never at or below it', () => {
    // two ranges: fixed at 4.2.0, and introduced 5.0.0 fixed at 5.1.3
    const jwt: AffectedEntry = {
      ecosystem: 'npm',
      versions: [],
      ranges: [
        { type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '4.2.0' }] },
        { type: 'SEMVER', events: [{ introduced: '5.0.0' }, { fixed: '5.1.3' }] },
      ],
    };
    expect(fixes('5.1.2', jwt)).toEqual(['5.1.3']);
    expect(fixes('4.1.0', jwt)).toEqual(['4.2.0']);
    expect(fixes('4.5.0', jwt)).toBeUndefined();
    // the same intervals in one range
    const one = entry('npm', [{ introduced: '0' }, { fixed: '4.2.0' }, { introduced: '5.0.0' }, { fixed: '5.1.3' }], [], 'SEMVER');
    expect(fixes('5.1.2', one)).toEqual(['5.1.3']);
    // last_affected names no fix
    expect(fixes('2.0.0', entry('npm', [{ introduced: '0' }, { last_affected: '3.0.0' }], [], 'SEMVER'))).toEqual([]);
    // the record's fixes, all of them, in the ecosystem's order
    expect(fixedVersions(jwt)).toEqual(['4.2.0', '5.1.3']);
    expect(fixedVersions(entry('npm', [{ introduced: '0' }, { fixed: '10.0.0' }, { introduced: '0' }, { fixed: '9.1.0' }], [], 'SEMVER'))).toEqual([
      '9.1.0',
      '10.0.0',
    ]);
  });

  it('every range holding the version gives its fix, ordered by the ecosystem (not as text)', () => {
    const both: AffectedEntry = {
      ecosystem: 'npm',
      versions: [],
      ranges: [
        { type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '10.0.0' }] },
        { type: 'ECOSYSTEM', events: [{ introduced: '9.0.0' }, { fixed: '9.1.0' }] },
      ],
    };
    expect(fixes('9.0.5', both)).toEqual(['9.1.0', '10.0.0']);
    const deb: AffectedEntry = {
      ecosystem: 'Debian',
      versions: [],
      ranges: [
        { type: 'ECOSYSTEM', events: [{ introduced: '0' }, { fixed: '1:1.0-1' }] },
        { type: 'ECOSYSTEM', events: [{ introduced: '0' }, { fixed: '2.0-1' }] },
      ],
    };
    // an epoch sorts after every version without one
    expect(fixes('1.5-1', deb)).toEqual(['2.0-1', '1:1.0-1']);
  });

  it('a match by the versions list takes the fixes of the ranges holding the version, else those above it', () => {
    const e: AffectedEntry = {
      ecosystem: 'npm',
      versions: ['5.1.2'],
      ranges: [
        { type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '4.2.0' }] },
        { type: 'SEMVER', events: [{ introduced: '6.0.0' }, { fixed: '6.0.1' }] },
      ],
    };
    expect(matchAffected('5.1.2', e)).toEqual({ affected: true, match: { how: 'versions', version: '5.1.2' }, fixed_versions: ['6.0.1'] });
  });

  it('partial npm bounds are read (1.0 -> 1.0.0) and the range is evaluated', () => {
    const e = entry('npm', [{ introduced: '1.0' }, { fixed: '1.2' }]);
    expect(['0.9.9', '1.0.0', '1.1.5', '1.2.0'].map((v) => affected(v, e))).toEqual([false, true, true, false]);
    expect(fixes('1.1.5', e)).toEqual(['1.2']);
    expect(rangeProblems(e)).toEqual([]);
  });

  it('names every range no ordering can read, for every ecosystem', () => {
    expect(rangeProblems(entry('npm', [{ introduced: '0' }, { fixed: 'next' }], [], 'SEMVER'))).toEqual([
      { range_type: 'SEMVER', reason: 'fixed "next": not a version in the semver ordering' },
    ]);
    expect(rangeProblems(entry('PyPI', [{ introduced: 'one' }, { fixed: '2.0' }]))).toEqual([
      { range_type: 'ECOSYSTEM', reason: 'introduced "one": not a version in the pep440 ordering' },
    ]);
    expect(rangeProblems(entry('Debian', [{ introduced: '0' }, { last_affected: '1.0 beta' }]))).toEqual([
      { range_type: 'ECOSYSTEM', reason: 'last_affected "1.0 beta": not a version in the dpkg ordering' },
    ]);
    expect(rangeProblems(entry('Alpine', [{ introduced: '0' }, { fixed: '1.0 beta' }]))).toEqual([
      { range_type: 'ECOSYSTEM', reason: 'fixed "1.0 beta": not a version in the apk ordering' },
    ]);
    expect(rangeProblems(entry('RubyGems', [{ introduced: '0' }, { fixed: '2.0' }]))).toEqual([
      { range_type: 'ECOSYSTEM', reason: 'no version ordering for RubyGems: only the versions list is matched' },
    ]);
    // a GIT range names commits: never evaluated, by design, and not a problem of the record
    expect(rangeProblems(entry('npm', [{ introduced: 'abc123' }], [], 'GIT'))).toEqual([]);
    expect(rangeProblems(entry('Maven', [{ introduced: '0' }, { fixed: '2.15.0' }, { limit: '*' }]))).toEqual([]);
  });
});
