import { describe, expect, it } from 'vitest';
import { DerError, TAG, latin1, oid, readWhole, text, time } from '../src/encoding/der.js';

/** One DER TLV with a short-form length. */
const tlv = (tag: number, content: number[]): Uint8Array => new Uint8Array([tag, content.length, ...content]);
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));
const read = (bytes: Uint8Array) => readWhole(bytes);

describe('DER primitives of the certificate reader', () => {
  it('oid: dotted text for each first-arc range, multi-byte arcs, and refusals', () => {
    const cases: [number[], string][] = [
      [[0x55, 0x1d, 0x11], '2.5.29.17'],
      [[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02], '1.2.840.10045.4.3.2'],
      [[0x2b, 0x65, 0x70], '1.3.101.112'],
      [[0x06], '0.6'],
      [[0x88, 0x37, 0x03], '2.999.3'],
    ];
    for (const [content, dotted] of cases) {
      const b = tlv(TAG.OID, content);
      expect(oid(b, read(b))).toBe(dotted);
    }
    for (const bad of [[], [0x2a, 0x86], [0x2a, 0x80, 0x01]]) {
      const b = tlv(TAG.OID, bad);
      expect(() => oid(b, read(b))).toThrow(DerError);
    }
  });

  it('text: UTF8String decoded strictly, Printable/IA5 ASCII only', () => {
    const utf8 = tlv(TAG.UTF8_STRING, [...new TextEncoder().encode('gerät-ü')]);
    expect(text(utf8, read(utf8))).toBe('gerät-ü');
    const badUtf8 = tlv(TAG.UTF8_STRING, [0x61, 0xc3]);
    expect(() => text(badUtf8, read(badUtf8))).toThrow();
    // the shared decoder keeps no state from the refused input
    expect(text(utf8, read(utf8))).toBe('gerät-ü');
    const printable = tlv(TAG.PRINTABLE_STRING, ascii('dev-01'));
    expect(text(printable, read(printable))).toBe('dev-01');
    const nonAscii = tlv(TAG.IA5_STRING, [0x61, 0xe9]);
    expect(() => text(nonAscii, read(nonAscii))).toThrow(DerError);
  });

  it('time: UTCTime and GeneralizedTime, impossible dates refused', () => {
    const utc = tlv(TAG.UTC_TIME, ascii('270601120000Z'));
    expect(time(utc, read(utc)).toISOString()).toBe('2027-06-01T12:00:00.000Z');
    const old = tlv(TAG.UTC_TIME, ascii('991231235959Z'));
    expect(time(old, read(old)).toISOString()).toBe('1999-12-31T23:59:59.000Z');
    const gen = tlv(TAG.GENERALIZED_TIME, ascii('20500101000000Z'));
    expect(time(gen, read(gen)).toISOString()).toBe('2050-01-01T00:00:00.000Z');
    const feb30 = tlv(TAG.UTC_TIME, ascii('270230000000Z'));
    expect(() => time(feb30, read(feb30))).toThrow(DerError);
  });

  it('latin1: one character per byte', () => {
    expect(latin1(new Uint8Array([]))).toBe('');
    expect(latin1(new Uint8Array([0x41, 0x00, 0xe9, 0xff]))).toBe('A\u0000\u00e9\u00ff');
  });
});
