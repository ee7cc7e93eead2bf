import { describe, expect, it } from 'vitest';
import { IDENTIFIER_PATTERNS, deviceIdentity, isDeviceName, isUuid, normalizeUuid, parseCertificatePem, validateReleasePayload } from '../src/index.js';
import { loadVector, refusal } from './helpers/vectors.js';

const ids = loadVector('identifiers.json');
const payloads = loadVector('release-payloads.json');

describe('identifiers (vectors/identifiers.json)', () => {
  it.each(ids.uuid.valid as string[])('UUID %j is canonical', (u) => {
    expect(isUuid(u)).toBe(true);
    expect(normalizeUuid(u)).toBe(u);
  });
  it.each(ids.uuid.invalid as string[])('UUID %j is not canonical', (u) => expect(isUuid(u)).toBe(false));
  it.each((ids.uuid.normalize as { input: string; output: string | null }[]).map((n) => [n.input, n.output]))('normalizeUuid(%j) = %j', (input, output) => {
    expect(normalizeUuid(input) ?? null).toBe(output);
  });
  it.each(ids.device_name.valid as string[])('device name %j is valid', (n) => expect(isDeviceName(n)).toBe(true));
  it.each(ids.device_name.invalid as string[])('device name %j is invalid', (n) => expect(isDeviceName(n)).toBe(false));

  it('non-strings are neither', () => {
    for (const v of [undefined, null, 1, {}, ['edge-01']]) {
      expect(isUuid(v)).toBe(false);
      expect(normalizeUuid(v)).toBeUndefined();
      expect(isDeviceName(v)).toBe(false);
    }
  });

  it('the patterns are the contract text (messages quote their source)', () => {
    expect(IDENTIFIER_PATTERNS.deviceName.source).toBe('^[a-z0-9][a-z0-9._-]{0,62}$');
    expect(IDENTIFIER_PATTERNS.artifactName).toBe(IDENTIFIER_PATTERNS.deviceName);
    expect(IDENTIFIER_PATTERNS.product.source).toBe('^[a-z0-9][a-z0-9._-]{0,63}$');
    expect(IDENTIFIER_PATTERNS.version.source).toBe('^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$');
    expect(IDENTIFIER_PATTERNS.id.source).toBe('^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$');
    expect(Object.isFrozen(IDENTIFIER_PATTERNS)).toBe(true);
  });

  it('a signed payload names its tenant in lowercase only', () => {
    const upper = { ...payloads.good.single, tenant: payloads.good.single.tenant.toUpperCase() };
    expect(refusal(() => validateReleasePayload(upper)).issues.map((i) => i.path)).toEqual(['tenant']);
  });

  it('device certificates are read with the same rules', () => {
    const receipts = loadVector('receipts.json');
    expect(deviceIdentity(parseCertificatePem(receipts.device_certificate_pem))).toEqual({ tenant: ids.uuid.valid[0], device: 'edge-01' });
  });
});
