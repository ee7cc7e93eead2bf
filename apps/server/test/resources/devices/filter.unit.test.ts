/** The device filter grammar (docs/device-filter.md): what parses, and each refusal with its column. The SQL it compiles to, on each driver: filter.test.ts. */
import { describe, expect, it } from 'vitest';
import { parseFilter } from '../../../src/resources/devices/filter/index.js';
import { SERVER_LIMITS } from '../../../src/limits.js';

describe('device filter grammar', () => {
  it('refuses each malformed filter naming filter and the column where the problem starts', () => {
    const cases: [string, number, RegExp][] = [
      ['', 1, /empty/],
      ['tags has', 9, /expected a value/],
      ['name = "x" and', 15, /expected a field/],
      ['name = "x" nor tags has "eu"', 12, /expected "and", "or"/],
      ['hw_model = "x"', 1, /unknown field/],
      ['attributes.HW = "x"', 12, /attribute name/],
      ['name == "x"', 7, /expected a value/],
      ['name ! "x"', 6, /"!="/],
      ['name = "x', 8, /not closed/],
      ['name = x', 8, /expected a value/],
      ['name = 2.4.0-rc1', 13, /must be quoted/],
      ['(name = "x"', 12, /expected "\)"/],
      ['name = "a\\n"', 10, /may only escape/],
      ["name = 'x'", 8, /unexpected "'"/],
      ['name = "x"; drop table devices', 11, /unexpected ";"/],
      ['tags = "eu"', 6, /only "has"/],
      ['name has "x"', 6, /tags only/],
      ['status < "online"', 8, /status takes/],
      ['tags has "EU"', 10, /a tag matches/],
      ['name = "x" -- comment', 12, /unexpected "-"/],
      ['name = "x" /* c */', 12, /unexpected "\/"/],
      ['nаme = "x"', 2, /U\+0430/],
      ['name = "\u0000"', 9, /U\+0000/],
      ['name = "\ud800"', 9, /lone surrogate/],
    ];
    for (const [text, column, problem] of cases) {
      let message = '';
      try {
        parseFilter(text);
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message, text).toMatch(new RegExp(`^filter: column ${column}: `));
      expect(message, text).toMatch(problem);
    }
  });

  it('bounds length, comparisons and depth in SERVER_LIMITS.devices', () => {
    const err = (text: string) => {
      try {
        parseFilter(text);
        return '';
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(err('name = "' + 'x'.repeat(SERVER_LIMITS.devices.filterChars) + '"')).toMatch(/^filter: column 2001: longer than 2000/);
    const terms = Array.from({ length: SERVER_LIMITS.devices.filterTerms + 1 }, (_, i) => `name = "d${i}"`).join(' or ');
    expect(err(terms)).toMatch(/^filter: column \d+: more than 32 comparisons/);
    expect(err(Array.from({ length: SERVER_LIMITS.devices.filterTerms }, (_, i) => `name = "d${i}"`).join(' or '))).toBe('');
    expect(err('('.repeat(SERVER_LIMITS.devices.filterDepth + 1) + 'name = "x"' + ')'.repeat(SERVER_LIMITS.devices.filterDepth + 1))).toMatch(
      /^filter: column 9: nested deeper/,
    );
    expect(err('not '.repeat(SERVER_LIMITS.devices.filterDepth + 1) + 'name = "x"')).toMatch(/^filter: column 33: nested deeper/);
    expect(err('('.repeat(SERVER_LIMITS.devices.filterDepth) + 'name = "x"' + ')'.repeat(SERVER_LIMITS.devices.filterDepth))).toBe('');
    // a huge nesting is refused at its bound, never by the stack
    expect(err('('.repeat(100_000))).toMatch(/^filter: column 2001: longer/);
    expect(err('('.repeat(1999))).toMatch(/^filter: column 9: nested deeper/);
  });

  it('and binds tighter than or; not binds tightest; parentheses regroup', () => {
    const p = parseFilter('not tags has "a" or tags has "b" and tags has "c"');
    expect(p.kind).toBe('or');
    expect(p.kind === 'or' && p.left.kind).toBe('not');
    expect(p.kind === 'or' && p.right.kind).toBe('and');
    expect(parseFilter('(tags has "a" or tags has "b") and tags has "c"').kind).toBe('and');
  });
});
