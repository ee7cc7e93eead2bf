import { ReleaseError } from '@svc/release-core';
import { describe, expect, it } from 'vitest';
import { CliError, EXIT, outcomeOf, parseTimestamp } from '../src/index.js';

describe('outcomeOf: every failure is one exit status and one line', () => {
  it('a ReleaseError is a refusal naming its code', () => {
    const o = outcomeOf(new ReleaseError('SIGNATURE_INVALID', 'signature does not verify\nwith any trusted key'));
    expect(o).toEqual({ exit: EXIT.REFUSED, line: 'refused: SIGNATURE_INVALID: signature does not verify; with any trusted key' });
  });

  it('lists every issue path of an invalid payload, once', () => {
    const err = new ReleaseError('PAYLOAD_INVALID', 'invalid release payload: components[1].kind: unsupported (and 1 more)', {
      issues: [
        { path: 'components[1].kind', message: 'unsupported kind "os-package"' },
        { path: 'validity', message: 'required' },
      ],
    });
    expect(outcomeOf(err).line).toBe(
      'refused: PAYLOAD_INVALID: invalid release payload, 2 issues: components[1].kind: unsupported kind "os-package"; validity: required',
    );
    const one = new ReleaseError('PAYLOAD_INVALID', 'bad', { issues: [{ path: 'validity', message: 'required' }] });
    expect(outcomeOf(one).line).toBe('refused: PAYLOAD_INVALID: bad, 1 issue: validity: required');
  });

  it('CLI usage errors exit 2 and point at help', () => {
    expect(outcomeOf(new CliError('INPUT_UNREADABLE', 'key k.pub: no such file'), 'verify')).toEqual({
      exit: EXIT.USAGE,
      line: 'usage: INPUT_UNREADABLE: key k.pub: no such file (see svc-release verify --help)',
    });
    expect(outcomeOf(new CliError('INPUT_NOT_JSON', 'payload p.json: not JSON')).exit).toBe(EXIT.REFUSED);
  });

  it('anything unexpected exits 1 with one line and no stack', () => {
    const o = outcomeOf(new TypeError('boom\n    at somewhere (x.js:1:1)'));
    expect(o.exit).toBe(EXIT.REFUSED);
    expect(o.line).toBe('error: boom; at somewhere (x.js:1:1)');
    expect(outcomeOf('a string').line).toBe('error: a string');
  });
});

describe('parseTimestamp (--at)', () => {
  it.each([
    ['2026-05-01T12:00:00Z', '2026-05-01T12:00:00.000Z'],
    ['2026-05-01t12:00:00z', '2026-05-01T12:00:00.000Z'],
    ['2026-05-01T12:00:00.25+02:00', '2026-05-01T10:00:00.250Z'],
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
  ])('accepts %s', (input, iso) => {
    expect(parseTimestamp(input).toISOString()).toBe(iso);
  });

  it.each(['2025-02-29T00:00:00Z', '2026-04-31T00:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01T00:00:00+24:00', '1767225600', ''])(
    'refuses %s with a usage error naming the flag',
    (input) => {
      let caught: unknown;
      try {
        parseTimestamp(input);
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(CliError);
      expect((caught as CliError).code).toBe('USAGE');
      expect((caught as CliError).message).toMatch(/^--at /);
    },
  );
});
