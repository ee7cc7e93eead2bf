import { describe, expect, it } from 'vitest';
import { DerError, TAG, children, encodeTime, octets, readTlv, readWhole, seq, time, tlv, value } from '../src/encoding/der.js';

describe('DER writer, read back by the reader', () => {
  it.each([0, 1, 127, 128, 255, 256, 65_535, 65_536, 70_000])('a TLV of %i content bytes has the shortest length form', (n) => {
    const content = new Uint8Array(n).map((_, i) => i & 0xff);
    const der = tlv(TAG.OCTET_STRING, content.subarray(0, n >> 1), content.subarray(n >> 1));
    const lengthBytes = n < 0x80 ? 0 : n < 0x100 ? 1 : n < 0x10000 ? 2 : 3;
    expect(der.length).toBe(2 + lengthBytes + n);
    const t = readWhole(der);
    expect(t.tag).toBe(TAG.OCTET_STRING);
    expect(Buffer.from(value(der, t)).equals(Buffer.from(content))).toBe(true);
  });

  it('nests: a SEQUENCE of an OCTET STRING and a SEQUENCE', () => {
    const der = seq(octets(Uint8Array.of(1, 2)), seq(tlv(TAG.INTEGER, Uint8Array.of(5))));
    const [a, b] = children(der, readWhole(der));
    expect(Array.from(value(der, a!))).toEqual([1, 2]);
    expect(children(der, b!).map((t) => t.tag)).toEqual([TAG.INTEGER]);
  });

  it.each([
    ['1950-01-01T00:00:00Z', TAG.UTC_TIME, '500101000000Z'],
    ['2049-12-31T23:59:59Z', TAG.UTC_TIME, '491231235959Z'],
    ['2050-01-01T00:00:00Z', TAG.GENERALIZED_TIME, '20500101000000Z'],
    ['1949-12-31T23:59:59Z', TAG.GENERALIZED_TIME, '19491231235959Z'],
  ])('encodes %s as RFC 5280 says (tag 0x%s)', (iso, tag, text) => {
    const der = encodeTime(new Date(iso));
    const t = readTlv(der, 0);
    expect(t.tag).toBe(tag);
    expect(String.fromCharCode(...value(der, t))).toBe(text);
    expect(time(der, t).toISOString()).toBe(new Date(iso).toISOString());
  });

  it('drops fractions of a second', () => {
    const der = encodeTime(new Date('2026-03-04T05:06:07.890Z'));
    expect(time(der, readTlv(der, 0)).toISOString()).toBe('2026-03-04T05:06:07.000Z');
  });

  it('refuses content it cannot give a length of at most 3 bytes', () => {
    expect(() => tlv(TAG.OCTET_STRING, new Uint8Array(0x1000000))).toThrow(DerError);
  });
});

describe('DER reader refuses what is not DER', () => {
  it.each([
    ['a truncated header', [0x30]],
    ['an indefinite length', [0x30, 0x80, 0x00, 0x00]],
    ['a long form for a short length', [0x04, 0x81, 0x01, 0x00]],
    ['a length with a leading zero byte', [0x04, 0x82, 0x00, 0x80, ...new Array(0x80).fill(0)]],
    ['content running past its container', [0x04, 0x05, 0x00]],
    ['a multi-byte tag', [0x1f, 0x81, 0x00]],
  ])('%s', (_name, bytes) => {
    expect(() => readTlv(Uint8Array.from(bytes), 0)).toThrow(DerError);
  });

  it('children of a primitive TLV', () => {
    const der = octets(Uint8Array.of(1));
    expect(() => children(der, readWhole(der))).toThrow(/not constructed/);
  });
});
