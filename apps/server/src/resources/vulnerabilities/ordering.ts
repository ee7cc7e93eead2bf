/**
 * Version ordering per ecosystem (OSV `ECOSYSTEM` ranges), and the SemVer 2.0 ordering of
 * OSV `SEMVER` ranges. Maintained libraries where they exist (semver for npm, Go, crates.io
 * and SEMVER ranges; @renovatebot/pep440 for PyPI); dpkg, apk and Maven orderings are
 * written here from their reference implementations (docs/vulnerabilities.md) and tested
 * against them. An ecosystem without an ordering here is `generic`: only the exact
 * `versions` list of a record matches it, never a range. Pure.
 */
import { compare as comparePep440, valid as validPep440 } from '@renovatebot/pep440';
import semver from 'semver';
import { compareApk, isApkVersion } from './apk-version.js';
import { compareDpkg, parseDpkgVersion } from './dpkg-version.js';
import { compareMaven } from './maven-version.js';

export interface Ordering {
  /** The ordering's name, recorded on each finding that matched through a range. */
  name: 'semver' | 'pep440' | 'dpkg' | 'apk' | 'maven';
  /** Undefined when `v` is not a version of this ordering (then no range can match it). */
  parse(v: string): unknown;
  /** Compares two parsed versions: negative, zero or positive. */
  compare(a: unknown, b: unknown): number;
}

/**
 * A partial SemVer version completed with zeros (`1.0` -> `1.0.0`, `1` -> `1.0.0`, keeping a
 * prerelease and build), as osv-scanner reads npm versions: records written by hand name
 * bounds that way. Anything else is not a version.
 */
const PARTIAL_SEMVER = /^(0|[1-9]\d*)(?:\.(0|[1-9]\d*))?((?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)$/;
function parseSemver(raw: string): semver.SemVer | undefined {
  const v = raw.startsWith('v') ? raw.slice(1) : raw;
  const full = semver.parse(v);
  if (full) return full;
  const m = PARTIAL_SEMVER.exec(v);
  return m ? (semver.parse(`${m[1]}.${m[2] ?? '0'}.0${m[3]}`) ?? undefined) : undefined;
}

/** SemVer 2.0 (build metadata ignored); Go's leading `v` accepted; partial versions completed. */
const SEMVER: Ordering = {
  name: 'semver',
  parse: parseSemver,
  compare: (a, b) => semver.compare(a as semver.SemVer, b as semver.SemVer),
};

const PEP440: Ordering = {
  name: 'pep440',
  parse: (v) => (validPep440(v) === null ? undefined : v),
  compare: (a, b) => comparePep440(a as string, b as string),
};

const DPKG: Ordering = {
  name: 'dpkg',
  parse: parseDpkgVersion,
  compare: (a, b) => compareDpkg(a as never, b as never),
};

const APK: Ordering = {
  name: 'apk',
  parse: (v) => (isApkVersion(v) ? v : undefined),
  compare: (a, b) => compareApk(a as string, b as string),
};

const MAVEN: Ordering = {
  name: 'maven',
  // every string is a Maven version; an empty one is not
  parse: (v) => (v.trim() === '' ? undefined : v),
  compare: (a, b) => compareMaven(a as string, b as string),
};

/** OSV ecosystem (without its `:release` suffix) -> ordering of its ECOSYSTEM ranges. */
const BY_ECOSYSTEM: Record<string, Ordering> = {
  npm: SEMVER,
  Go: SEMVER,
  'crates.io': SEMVER,
  PyPI: PEP440,
  Debian: DPKG,
  Ubuntu: DPKG,
  Alpine: APK,
  Wolfi: APK,
  Chainguard: APK,
  Maven: MAVEN,
};

export function ecosystemOrdering(ecosystem: string): Ordering | undefined {
  return BY_ECOSYSTEM[ecosystem];
}

export function semverOrdering(): Ordering {
  return SEMVER;
}
