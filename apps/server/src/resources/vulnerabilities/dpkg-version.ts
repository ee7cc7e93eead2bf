/**
 * Debian version ordering, as dpkg implements it (lib/dpkg/version.c `dpkg_version_compare`
 * and `verrevcmp`; Debian Policy §5.6.12): `[epoch:]upstream[-revision]`; epochs compare as
 * numbers; upstream and revision compare by alternating runs of non-digits (letters sort
 * before other characters, `~` before anything, even the end) and digits (as numbers).
 * Tested against `dpkg --compare-versions` itself (test/resources/vulnerabilities/versions.test.ts). Pure.
 */

export interface DpkgVersion {
  epoch: number;
  upstream: string;
  revision: string;
}

/** Parses `[epoch:]upstream[-revision]`; undefined when it is not a Debian version. */
export function parseDpkgVersion(v: string): DpkgVersion | undefined {
  const s = v.trim();
  if (s === '' || /\s/.test(s)) return undefined;
  let epoch = 0;
  let rest = s;
  const colon = s.indexOf(':');
  if (colon >= 0) {
    const e = s.slice(0, colon);
    if (!/^[0-9]+$/.test(e)) return undefined;
    epoch = Number(e);
    if (!Number.isSafeInteger(epoch)) return undefined;
    rest = s.slice(colon + 1);
  }
  const dash = rest.lastIndexOf('-');
  const upstream = dash >= 0 ? rest.slice(0, dash) : rest;
  const revision = dash >= 0 ? rest.slice(dash + 1) : '';
  // dpkg: the upstream version must start with a digit, and only these characters are allowed
  if (!/^[0-9][A-Za-z0-9.+~:-]*$/.test(upstream) || (dash >= 0 && !/^[A-Za-z0-9.+~]+$/.test(revision))) return undefined;
  return { epoch, upstream, revision };
}

const isDigit = (c: number) => c >= 48 && c <= 57;
const isAlpha = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);

/** dpkg's `order()`: digits and the end 0, letters themselves, `~` -1, anything else after letters. */
function order(c: number): number {
  if (isDigit(c)) return 0;
  if (isAlpha(c)) return c;
  if (c === 126) return -1;
  if (c) return c + 256;
  return 0;
}

/** dpkg's `verrevcmp`: negative, zero or positive. */
export function verrevcmp(a: string, b: string): number {
  let i = 0;
  let j = 0;
  const at = (s: string, k: number) => (k < s.length ? s.charCodeAt(k) : 0);
  while (i < a.length || j < b.length) {
    let firstDiff = 0;
    while ((at(a, i) && !isDigit(at(a, i))) || (at(b, j) && !isDigit(at(b, j)))) {
      const ac = order(at(a, i));
      const bc = order(at(b, j));
      if (ac !== bc) return ac - bc;
      i++;
      j++;
    }
    while (at(a, i) === 48) i++;
    while (at(b, j) === 48) j++;
    while (isDigit(at(a, i)) && isDigit(at(b, j))) {
      if (!firstDiff) firstDiff = at(a, i) - at(b, j);
      i++;
      j++;
    }
    if (isDigit(at(a, i))) return 1;
    if (isDigit(at(b, j))) return -1;
    if (firstDiff) return firstDiff;
  }
  return 0;
}

/** Compares two parsed Debian versions: epoch, then upstream, then revision. */
export function compareDpkg(a: DpkgVersion, b: DpkgVersion): number {
  if (a.epoch !== b.epoch) return a.epoch < b.epoch ? -1 : 1;
  const u = verrevcmp(a.upstream, b.upstream);
  if (u !== 0) return Math.sign(u);
  return Math.sign(verrevcmp(a.revision, b.revision));
}
