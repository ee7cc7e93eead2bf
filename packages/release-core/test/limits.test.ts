import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  LIMITS,
  parseCertificateDer,
  parseEnvelope,
  parseCertificatePem,
  validateReceiptPayload,
  validateReleasePayload,
  verifyReceipt,
} from '../src/index.js';
import { loadVector, refusal } from './helpers/vectors.js';

const receipts = loadVector('receipts.json');
const payloads = loadVector('release-payloads.json');
const envelopes = loadVector('release-envelopes.json');
const padTo = (text: string, length: number) => text + ' '.repeat(length - text.length);

describe('LIMITS', () => {
  it('is one frozen object', () => {
    expect(Object.isFrozen(LIMITS)).toBe(true);
    expect(() => {
      (LIMITS as { components: number }).components = 1000;
    }).toThrow(TypeError);
  });

  it('README "Limits" lists every value, and nothing else', () => {
    const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8');
    const units: Record<string, number> = { '': 1, KiB: 1024, MiB: 1024 * 1024, hour: 3600, years: 365 * 24 * 3600 };
    const rows = [...readme.matchAll(/^\| `(\w+)` \| ([\d,]+)(?: (KiB|MiB|hour|years))? \|/gm)].map(
      (m) => [m[1]!, Number(m[2]!.replaceAll(',', '')) * units[m[3] ?? '']!] as const,
    );
    expect(Object.fromEntries(rows)).toEqual({ ...LIMITS });
    expect(rows).toHaveLength(Object.keys(LIMITS).length);
  });

  it('parseEnvelope takes a release envelope up to releaseEnvelopeBytes by default', () => {
    const text = JSON.stringify(envelopes.good[0].envelope);
    expect(parseEnvelope(padTo(text, LIMITS.releaseEnvelopeBytes)).payloadType).toBe('svc.release.v1');
    expect(refusal(() => parseEnvelope(padTo(text, LIMITS.releaseEnvelopeBytes + 1))).code).toBe('SIZE_LIMIT');
  });

  it('verifyReceipt takes a receipt up to receiptEnvelopeBytes by default', () => {
    const good = receipts.good.find((g: any) => g.name === 'single');
    const opts = { ca: parseCertificatePem(receipts.ca_pem), tenant: good.verify.tenant, device: good.verify.device, now: new Date(good.verify.now) };
    const text = JSON.stringify(good.envelope);
    expect(verifyReceipt(padTo(text, LIMITS.receiptEnvelopeBytes), opts).payload.device.name).toBe('edge-01');
    const err = refusal(() => verifyReceipt(padTo(text, LIMITS.receiptEnvelopeBytes + 1), opts));
    expect(err.code).toBe('SIZE_LIMIT');
    expect(err.message).toContain(`${LIMITS.receiptEnvelopeBytes}-byte limit`);
  });

  it('certificates over certificateBytes are not read', () => {
    const err = refusal(() => parseCertificateDer(new Uint8Array(LIMITS.certificateBytes + 1)));
    expect(err.code).toBe('SIZE_LIMIT');
  });

  it('a release has at most `components` components, a receipt at most as many members', () => {
    const single = payloads.good.single;
    const many = { ...single, components: Array.from({ length: LIMITS.components + 1 }, () => single.components[0]) };
    expect(refusal(() => validateReleasePayload(many)).issues).toContainEqual({
      path: 'components',
      message: `has ${LIMITS.components + 1} items, at most ${LIMITS.components} allowed`,
    });
    const multi = JSON.parse(Buffer.from(receipts.good.find((g: any) => g.name === 'multi').envelope.payload, 'base64').toString());
    const tooMany = { ...multi, transaction: { ...multi.transaction, member_count: LIMITS.components + 1 } };
    expect(refusal(() => validateReceiptPayload(tooMany)).issues.map((i) => i.path)).toContain('transaction.member_count');
  });
});
