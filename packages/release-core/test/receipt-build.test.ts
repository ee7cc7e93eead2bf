import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type ReceiptFacts,
  type ReceiptMember,
  type ReceiptPayload,
  buildReceiptPayload,
  parseCertificatePem,
  parsePrivateKeyPem,
  signReceipt,
  verifyReceipt,
} from '../src/index.js';
import { loadVector, refusal, vectorsDir } from './helpers/vectors.js';

const receipts = loadVector('receipts.json');
const payloadOf = (name: string): ReceiptPayload =>
  JSON.parse(Buffer.from(receipts.good.find((g: any) => g.name === name).envelope.payload, 'base64').toString());
const deviceKey = parsePrivateKeyPem(readFileSync(join(vectorsDir, 'keys', 'device.key.pem'), 'utf8'));

/** The facts a device holds for a vector receipt, in the shape the builder takes. */
function factsOf(p: ReceiptPayload): ReceiptFacts {
  const common = {
    tenant: p.tenant,
    device: { name: p.device.name, certificateDer: new Uint8Array(Buffer.from(p.device.certificate, 'base64')) },
    release: p.release,
    activation: p.activation,
    health: p.health,
    now: new Date(p.timestamp),
  };
  if (p.members !== undefined) return { ...common, transaction: p.transaction!, members: [...p.members].reverse() };
  const verdict = p.activation === 'activated' ? 'committed' : p.activation;
  const only: ReceiptMember = {
    group: 0,
    position: 0,
    component: 'only',
    rollout: p.rollout!,
    candidate_digest: p.candidate_digest!,
    previous_digest: p.previous_digest!,
    resulting_digest: p.resulting_digest!,
    verdict,
  };
  return { ...common, transaction: { id: 'tx-single', member_count: 1 }, members: [only], ...(p.os ? { os: p.os } : {}) };
}

describe('buildReceiptPayload (contracts §3)', () => {
  it.each(['single', 'multi', 'multi-rolled-back', 'os'])('rebuilds the %s vector receipt from its facts', (name) => {
    const p = payloadOf(name);
    expect(buildReceiptPayload(factsOf(p))).toEqual(p);
  });

  it('orders members by position and writes the timestamp to the second', () => {
    const p = payloadOf('multi');
    const built = buildReceiptPayload({ ...factsOf(p), now: new Date('2027-06-01T10:20:30.456Z') });
    expect(built.members!.map((m) => m.position)).toEqual([0, 1, 2]);
    expect(built.timestamp).toBe('2027-06-01T10:20:30Z');
    expect(built.rollout).toBeUndefined();
  });

  it('what it builds is signed and verified as it is', () => {
    const p = payloadOf('multi');
    const env = signReceipt(buildReceiptPayload(factsOf(p)), deviceKey);
    const v = verifyReceipt(env, { ca: parseCertificatePem(receipts.ca_pem), tenant: p.tenant, device: p.device.name, now: new Date('2027-06-01T00:00:00Z') });
    expect(v.payload).toEqual(p);
  });

  it('an OS result not reported yet is written as null and marked "none", and named as missing', () => {
    const p = payloadOf('os');
    const err = refusal(() => buildReceiptPayload({ ...factsOf(p), os: { installed_slot: 'B' } }));
    expect(err.code).toBe('RECEIPT_INVALID');
    const paths = err.issues.map((i) => i.path);
    expect(paths).toContain('os.compatible');
    expect(paths).not.toContain('os.mark');
    expect(paths).not.toContain('os.booted_slot');
  });

  it('refuses inconsistent facts the way signing would (RECEIPT_INVALID, every field)', () => {
    const p = payloadOf('multi');
    const f = factsOf(p);
    const err = refusal(() =>
      buildReceiptPayload({ ...f, health: 'unhealthy', members: f.members.map((m) => ({ ...m, resulting_digest: m.previous_digest })) }),
    );
    expect(err.code).toBe('RECEIPT_INVALID');
    expect(err.issues.map((i) => i.path)).toEqual(expect.arrayContaining(['activation', 'members[0].resulting_digest']));
  });

  it('a single-component receipt needs exactly one member (a caller mistake otherwise)', () => {
    const f = factsOf(payloadOf('multi'));
    expect(() => buildReceiptPayload({ ...f, transaction: { ...f.transaction, member_count: 1 } })).toThrow(TypeError);
  });
});
