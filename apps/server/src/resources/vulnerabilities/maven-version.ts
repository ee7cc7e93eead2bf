/**
 * Maven version ordering, as Maven's `ComparableVersion` implements it (maven-artifact:
 * items separated by `.` and `-`, and at every switch between digits and letters; numbers
 * compare as numbers; known qualifiers order `alpha < beta < milestone < rc < snapshot <
 * (release) < sp`, unknown ones after them alphabetically; `a1`/`b1`/`m1` abbreviate
 * alpha/beta/milestone; `ga`, `final`, `release` equal the release; `cr` equals `rc`;
 * trailing zeros and release qualifiers are dropped). Tested against Maven's own class run
 * by `java` (test/resources/vulnerabilities/versions.test.ts). Pure.
 */

type Item = { t: 'int'; v: bigint } | { t: 'str'; v: string } | { t: 'list'; v: Item[] };

const QUALIFIERS = ['alpha', 'beta', 'milestone', 'rc', 'snapshot', '', 'sp'];
const ALIASES: Record<string, string> = { ga: '', final: '', release: '', cr: 'rc' };
const RELEASE_INDEX = String(QUALIFIERS.indexOf(''));

function stringItem(value: string, followedByDigit: boolean): Item {
  let v = value;
  if (followedByDigit && v.length === 1) v = v === 'a' ? 'alpha' : v === 'b' ? 'beta' : v === 'm' ? 'milestone' : v;
  return { t: 'str', v: ALIASES[v] ?? v };
}

function comparableQualifier(q: string): string {
  const i = QUALIFIERS.indexOf(q);
  return i === -1 ? `${QUALIFIERS.length}-${q}` : String(i);
}

const cmpStr = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function parseItem(isDigit: boolean, buf: string): Item {
  return isDigit ? { t: 'int', v: BigInt(buf) } : stringItem(buf, false);
}

function isNull(i: Item): boolean {
  if (i.t === 'int') return i.v === 0n;
  if (i.t === 'str') return comparableQualifier(i.v) === RELEASE_INDEX;
  return i.v.length === 0;
}

function normalize(list: Item[]): void {
  for (let i = list.length - 1; i >= 0; i--) {
    const last = list[i]!;
    if (isNull(last)) list.splice(i, 1);
    else if (last.t !== 'list') break;
  }
}

/** ComparableVersion.parseVersion: the item tree of a version string. */
export function parseMavenVersion(version: string): Item {
  const root: Item & { t: 'list' } = { t: 'list', v: [] };
  const v = version.toLowerCase();
  let list = root;
  const stack: (Item & { t: 'list' })[] = [root];
  let isDigit = false;
  let start = 0;
  const push = () => {
    const next: Item & { t: 'list' } = { t: 'list', v: [] };
    list.v.push(next);
    list = next;
    stack.push(next);
  };
  for (let i = 0; i < v.length; i++) {
    const c = v[i]!;
    if (c === '.') {
      list.v.push(i === start ? { t: 'int', v: 0n } : parseItem(isDigit, v.slice(start, i)));
      start = i + 1;
    } else if (c === '-') {
      list.v.push(i === start ? { t: 'int', v: 0n } : parseItem(isDigit, v.slice(start, i)));
      start = i + 1;
      push();
    } else if (c >= '0' && c <= '9') {
      if (!isDigit && i > start) {
        // 1.0.0.X1 < 1.0.0-X2: a qualifier after a dot starts a sub-list like after a dash
        if (list.v.length > 0) push();
        list.v.push(stringItem(v.slice(start, i), true));
        start = i;
        push();
      }
      isDigit = true;
    } else {
      if (isDigit && i > start) {
        list.v.push(parseItem(true, v.slice(start, i)));
        start = i;
        push();
      }
      isDigit = false;
    }
  }
  if (v.length > start) {
    if (!isDigit && list.v.length > 0) push();
    list.v.push(parseItem(isDigit, v.slice(start)));
  }
  while (stack.length > 0) normalize(stack.pop()!.v);
  return root;
}

/** Item.compareTo (null = the missing item of the shorter list). */
function compareItem(a: Item, b: Item | null): number {
  if (a.t === 'int') {
    if (b === null) return a.v === 0n ? 0 : 1;
    if (b.t === 'int') return a.v < b.v ? -1 : a.v > b.v ? 1 : 0;
    return 1; // a number is newer than any qualifier or sub-list
  }
  if (a.t === 'str') {
    if (b === null) return cmpStr(comparableQualifier(a.v), RELEASE_INDEX);
    if (b.t === 'str') return cmpStr(comparableQualifier(a.v), comparableQualifier(b.v));
    return -1; // 1.any < 1.1 and 1.any < 1-1
  }
  if (b === null) {
    // the whole list against nothing, not only its first item (MNG-6964)
    for (const i of a.v) {
      const r = compareItem(i, null);
      if (r !== 0) return r;
    }
    return 0;
  }
  if (b.t === 'int') return -1;
  if (b.t === 'str') return 1;
  const n = Math.max(a.v.length, b.v.length);
  for (let i = 0; i < n; i++) {
    const l = a.v[i] ?? null;
    const r = b.v[i] ?? null;
    const result = l === null ? (r === null ? 0 : -compareItem(r, l)) : compareItem(l, r);
    if (result !== 0) return result;
  }
  return 0;
}

/** -1, 0 or 1, as `new ComparableVersion(a).compareTo(new ComparableVersion(b))`. */
export function compareMaven(a: string, b: string): number {
  return Math.sign(compareItem(parseMavenVersion(a), parseMavenVersion(b)));
}
