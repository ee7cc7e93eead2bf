/**
 * Alpine package version ordering, as apk-tools implements it (src/version.c: tokens of
 * digits, one letter, `_suffix[N]` and `-rN`; pre-release suffixes `alpha beta pre rc` sort
 * before the release, post-release suffixes `cvs svn git hg p` after it; a leading-zero
 * component after a dot compares as a fraction). Tested against apk-tools' own
 * test/version.data (test/vectors/apk-version.json). Pure.
 */

const enum Token {
  Invalid = -1,
  DigitOrZero = 0,
  Digit = 1,
  Letter = 2,
  Suffix = 3,
  SuffixNo = 4,
  RevisionNo = 5,
  End = 6,
}

const PRE_SUFFIXES = ['alpha', 'beta', 'pre', 'rc'];
const POST_SUFFIXES = ['cvs', 'svn', 'git', 'hg', 'p'];

const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';
const isLower = (c: string | undefined) => c !== undefined && c >= 'a' && c <= 'z';

interface Cursor {
  s: string;
  i: number;
  type: Token;
}

function nextToken(c: Cursor): void {
  let n: Token = Token.Invalid;
  const ch = c.s[c.i];
  if (c.i >= c.s.length) {
    n = Token.End;
  } else if ((c.type === Token.Digit || c.type === Token.DigitOrZero) && isLower(ch)) {
    n = Token.Letter;
  } else if (c.type === Token.Letter && isDigit(ch)) {
    n = Token.Digit;
  } else if (c.type === Token.Suffix && isDigit(ch)) {
    n = Token.SuffixNo;
  } else {
    if (ch === '.') n = Token.DigitOrZero;
    else if (ch === '_') n = Token.Suffix;
    else if (ch === '-') {
      if (c.s[c.i + 1] === 'r') {
        n = Token.RevisionNo;
        c.i++;
      } else n = Token.Invalid;
    }
    c.i++;
  }
  if (n < c.type) {
    if (!(
      (n === Token.DigitOrZero && c.type === Token.Digit) ||
      (n === Token.Suffix && c.type === Token.Letter) ||
      (n === Token.Digit && c.type === Token.Letter)
    )) {
      n = Token.Invalid;
    }
  }
  c.type = n;
}

function getToken(c: Cursor): number {
  let v = 0;
  let i = 0;
  let nt: Token = Token.Invalid;
  const rest = c.s.slice(c.i);
  if (rest.length === 0) {
    c.type = Token.End;
    return 0;
  }
  if (c.type === Token.DigitOrZero && rest[0] === '0') {
    // leading zeros after a dot: a fraction, compared by how many zeros lead
    while (i < rest.length && rest[i] === '0') i++;
    nt = Token.Digit;
    v = -i;
  } else if (c.type === Token.DigitOrZero || c.type === Token.Digit || c.type === Token.SuffixNo || c.type === Token.RevisionNo) {
    while (i < rest.length && isDigit(rest[i])) {
      v = v * 10 + (rest.charCodeAt(i) - 48);
      i++;
    }
  } else if (c.type === Token.Letter) {
    v = rest.charCodeAt(0);
    i = 1;
  } else if (c.type === Token.Suffix) {
    const pre = PRE_SUFFIXES.findIndex((p) => rest.startsWith(p));
    const post = pre >= 0 ? -1 : POST_SUFFIXES.findIndex((p) => rest.startsWith(p));
    if (pre >= 0) {
      v = pre - PRE_SUFFIXES.length;
      i = PRE_SUFFIXES[pre]!.length;
    } else if (post >= 0) {
      v = post;
      i = POST_SUFFIXES[post]!.length;
    } else {
      c.type = Token.Invalid;
      return -1;
    }
  } else {
    c.type = Token.Invalid;
    return -1;
  }
  c.i += i;
  if (c.i >= c.s.length) c.type = Token.End;
  else if (nt !== Token.Invalid) c.type = nt;
  else nextToken(c);
  return v;
}

/** apk_version_compare: -1, 0 or 1. */
export function compareApk(a: string, b: string): number {
  const ca: Cursor = { s: a, i: 0, type: Token.Digit };
  const cb: Cursor = { s: b, i: 0, type: Token.Digit };
  let av = 0;
  let bv = 0;
  while (ca.type === cb.type && ca.type !== Token.End && ca.type !== Token.Invalid && av === bv) {
    av = getToken(ca);
    bv = getToken(cb);
  }
  if (av < bv) return -1;
  if (av > bv) return 1;
  if (ca.type === cb.type) return 0;
  // equal so far: the longer version is greater, unless what follows is a pre-release suffix
  if (ca.type === Token.Suffix && getToken({ ...ca }) < 0) return -1;
  if (cb.type === Token.Suffix && getToken({ ...cb }) < 0) return 1;
  if (ca.type > cb.type) return -1;
  if (cb.type > ca.type) return 1;
  return 0;
}

/** apk_version_validate: the whole string tokenizes to the end. */
export function isApkVersion(v: string): boolean {
  if (v === '' || !isDigit(v[0])) return false;
  const c: Cursor = { s: v, i: 0, type: Token.Digit };
  while (c.type !== Token.End) {
    getToken(c);
    if (c.type === Token.Invalid) return false;
  }
  return true;
}
