/**
 * Package identity shared by SBOM components and OSV records: a `package_key` both sides
 * compute, so matching is one indexed equality. A package URL (parsed by packageurl-js)
 * maps to an OSV ecosystem and that ecosystem's package name (npm `@scope/name`, Maven
 * `group:artifact`, Go module path, PyPI's normalized name, Debian and Alpine SOURCE package
 * names taken from the purl's `upstream` qualifier when present); a purl of any other type
 * keys by itself (`purl:pkg:type/namespace/name`). Distribution releases (`Debian:12`,
 * `Alpine:v3.19`) are kept apart from the key and compared separately. Pure.
 */
import { PackageURL } from 'packageurl-js';

export interface PackageIdentity {
  /** `Ecosystem|name` or `purl:pkg:type/ns/name`: the join key with OSV affected entries. */
  key: string;
  /** OSV ecosystem (base, no release), or null for a purl type OSV has no ecosystem for. */
  ecosystem: string | null;
  /** Distribution release (`12`, `v3.19`), when the purl names one. */
  release: string | null;
  name: string;
}

/** purl type (+ namespace for distributions) -> OSV ecosystem. */
function ecosystemOfPurl(p: PackageURL): string | null {
  switch (p.type) {
    case 'npm':
      return 'npm';
    case 'pypi':
      return 'PyPI';
    case 'golang':
      return 'Go';
    case 'maven':
      return 'Maven';
    case 'cargo':
      return 'crates.io';
    case 'gem':
      return 'RubyGems';
    case 'nuget':
      return 'NuGet';
    case 'composer':
      return 'Packagist';
    case 'hex':
      return 'Hex';
    case 'pub':
      return 'Pub';
    case 'deb':
      return p.namespace === 'ubuntu' ? 'Ubuntu' : p.namespace === 'debian' ? 'Debian' : null;
    case 'apk':
      return p.namespace === 'alpine' ? 'Alpine' : p.namespace === 'wolfi' ? 'Wolfi' : p.namespace === 'chainguard' ? 'Chainguard' : null;
    default:
      return null;
  }
}

/** PEP 503 normalized name. */
export function normalizePypiName(n: string): string {
  return n.toLowerCase().replace(/[-_.]+/g, '-');
}

/** OSV package name as the ecosystem spells it, normalized where the ecosystem is insensitive. */
export function osvPackageName(ecosystem: string, name: string): string {
  if (ecosystem === 'PyPI') return normalizePypiName(name);
  return name;
}

function packageName(p: PackageURL, ecosystem: string): string {
  const ns = p.namespace ?? '';
  switch (ecosystem) {
    case 'npm':
      return ns ? `${ns}/${p.name}` : p.name;
    case 'Maven':
      return `${ns}:${p.name}`;
    case 'Go':
    case 'Packagist':
      return ns ? `${ns}/${p.name}` : p.name;
    case 'Debian':
    case 'Ubuntu':
    case 'Alpine':
    case 'Wolfi':
    case 'Chainguard': {
      // distribution advisories name the SOURCE package; SBOM tools put it in `upstream`
      const upstream = p.qualifiers?.['upstream'];
      return upstream ? upstream.split(/[@ ]/)[0]! : p.name;
    }
    default:
      return osvPackageName(ecosystem, p.name);
  }
}

/** The release a distribution purl names (`distro=debian-12` -> `12`, `alpine-3.19.1` -> `v3.19`). */
function releaseOf(p: PackageURL, ecosystem: string): string | null {
  const distro = p.qualifiers?.['distro'];
  if (!distro) return null;
  const m = /^[a-z]+-(.+)$/.exec(distro);
  const v = m ? m[1]! : distro;
  if (ecosystem === 'Alpine') {
    const mm = /^v?(\d+)\.(\d+)/.exec(v);
    return mm ? `v${mm[1]}.${mm[2]}` : null;
  }
  if (ecosystem === 'Debian') return /^\d+/.exec(v)?.[0] ?? null;
  if (ecosystem === 'Ubuntu') return /^\d+\.\d+/.exec(v)?.[0] ?? null;
  return null;
}

export interface ParsedPurl {
  purl: string;
  identity: PackageIdentity;
  version: string | null;
  type: string;
}

/** Parses and canonicalizes a package URL; throws packageurl-js's error on a bad one. */
export function parsePurl(raw: string): ParsedPurl {
  const p = PackageURL.fromString(raw);
  const ecosystem = ecosystemOfPurl(p);
  const version = p.version ?? null;
  if (ecosystem !== null) {
    const name = packageName(p, ecosystem);
    return { purl: p.toString(), version, type: p.type, identity: { key: `${ecosystem}|${name}`, ecosystem, release: releaseOf(p, ecosystem), name } };
  }
  const base = new PackageURL(p.type, p.namespace, p.name, undefined, undefined, undefined).toString();
  return {
    purl: p.toString(),
    version,
    type: p.type,
    identity: { key: `purl:${base}`, ecosystem: null, release: null, name: p.namespace ? `${p.namespace}/${p.name}` : p.name },
  };
}

/**
 * The key of one OSV `affected[].package`: `Ecosystem|name` for a named ecosystem; the
 * entry's purl key when the ecosystem is one purls do not map to (so a `pkg:generic` SBOM
 * component can still meet a record that names its purl).
 */
export function osvPackageIdentity(pkg: { ecosystem: string; name: string; purl?: string | undefined }): {
  key: string;
  ecosystem: string;
  release: string | null;
} {
  const colon = pkg.ecosystem.indexOf(':');
  const ecosystem = colon >= 0 ? pkg.ecosystem.slice(0, colon) : pkg.ecosystem;
  const release = colon >= 0 ? pkg.ecosystem.slice(colon + 1).split(':')[0]! : null;
  const known = [
    'npm',
    'PyPI',
    'Go',
    'Maven',
    'crates.io',
    'RubyGems',
    'NuGet',
    'Packagist',
    'Hex',
    'Pub',
    'Debian',
    'Ubuntu',
    'Alpine',
    'Wolfi',
    'Chainguard',
  ];
  if (!known.includes(ecosystem) && pkg.purl) {
    try {
      const p = parsePurl(pkg.purl);
      if (p.identity.ecosystem === null) return { key: p.identity.key, ecosystem, release };
    } catch {
      // a bad purl on a record: fall back to the ecosystem key
    }
  }
  return { key: `${ecosystem}|${osvPackageName(ecosystem, pkg.name)}`, ecosystem, release };
}
