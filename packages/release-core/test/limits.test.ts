import { describe, expect, it } from 'vitest';
import { LIMITS, parseCertificateDer, parseEnvelope, parseCertificatePem, validateReceiptPayload, validateReleasePayload, verifyReceipt } from '../src/index.js';
import { loadVector, refusal } from './helpers/vectors.js';

const receipts = loadVector('receipts.json');
const payloads = loadVector('release-payloads.json');
const envelopes = loadVector('release-envelopes.json');
const padTo = (text: string, length: number) => text + ' '.repeat(length - text.length);

describe('LIMITS', () => {
  it('is one frozen object; changing a value is a deliberate act', () => {
    expect(Object.isFrozen(LIMITS)).toBe(true);
    expect(() => {
      (LIMITS as { components: number }).components = 1000;
    }).toThrow(TypeError);
    expect(LIMITS).toEqual({
      releaseEnvelopeBytes: 1024 * 1024,
      receiptEnvelopeBytes: 256 * 1024,
      signatures: 16,
      certificateBytes: 16 * 1024,
      logBundleBytes: 16 * 1024 * 1024,
      legacyDetailChars: 1024,
      components: 64,
      profiles: 32,
      probes: 16,
      commandArgs: 32,
      waves: 16,
      legacyRolloutWaves: 100,
      approvals: 32,
      attestations: 32,
      maxOfflineAgeSeconds: 10 * 365 * 24 * 3600,
      probeTimeoutSeconds: 3600,
    });
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
    expect(refusal(() => validateReleasePayload(many)).issues).toContainEqual({ path: 'components', message: `has ${LIMITS.components + 1} items, at most ${LIMITS.components} allowed` });
    const multi = JSON.parse(Buffer.from(receipts.good.find((g: any) => g.name === 'multi').envelope.payload, 'base64').toString());
    const tooMany = { ...multi, transaction: { ...multi.transaction, member_count: LIMITS.components + 1 } };
    expect(refusal(() => validateReceiptPayload(tooMany)).issues.map((i) => i.path)).toContain('transaction.member_count');
  });
});
