import {
  isReleaseError,
  parseCertificateDer,
  parseEnvelope,
  sha256Digest,
  verifyReceipt,
  LIMITS,
  RECEIPT_PAYLOAD_TYPE,
  normalizeUuid,
} from '@svc/release-core';
import type { Db } from '../../store/tx.js';
import { receiptById, tenantDeviceCaDers, type ReceiptRow } from './queries.js';
import type { ReceiptDetailView, ReceiptVerificationView, ReceiptView } from './schemas.js';

export function receiptJson(r: ReceiptRow): ReceiptView {
  return {
    id: r.id,
    device: r.device_name,
    rollout_id: r.rollout_id,
    // spec §3 rule 2: the deployment id is the transaction id of every signed deployment
    transaction_id: r.deployment_id,
    release_id: r.release_id,
    activation: r.activation,
    health: r.health,
    payload_digest: r.payload_digest,
    envelope_digest: r.envelope_digest,
    label: r.label,
    accepted_at: r.accepted_at.toISOString(),
  };
}

/** One receipt with its exact envelope, its payload and the envelope verified again (spec §2.3 rules 5 and 6). */
export async function receiptDetail(db: Db, tenantId: string, id: string, now: Date): Promise<ReceiptDetailView | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  const r = await receiptById(db, tenantId, uuid);
  if (!r) return undefined;
  const envelope = JSON.parse(Buffer.from(r.envelope_bytes).toString('utf8')) as ReceiptDetailView['envelope'];
  // the CAs trusted when the receipt was accepted: a rotation since then does not unverify it
  const caDers = await tenantDeviceCaDers(db, tenantId, r.accepted_at);
  return { ...receiptJson(r), envelope, payload: r.payload, verification: verify(r, caDers, tenantId, now) };
}

function verify(r: ReceiptRow & { envelope_bytes: Uint8Array }, caDers: readonly Uint8Array[], tenantId: string, now: Date): ReceiptVerificationView {
  const out: ReceiptVerificationView = {
    verified: false,
    checked_at: now.toISOString(),
    certificate_valid_at: r.accepted_at.toISOString(),
    error: null,
    device_certificate: null,
  };
  if (caDers.length === 0) return { ...out, error: 'RECEIPT_UNEXPECTED: the tenant has no device CA' };
  try {
    const env = parseEnvelope(r.envelope_bytes, { maxBytes: LIMITS.receiptEnvelopeBytes, payloadTypes: [RECEIPT_PAYLOAD_TYPE] });
    const v = verifyReceipt(env, { ca: caDers.map((der) => parseCertificateDer(der)), tenant: tenantId, device: r.device_name, now: r.accepted_at });
    const c = v.certificate;
    out.device_certificate = {
      fingerprint: sha256Digest(c.der),
      serial_number: c.serialNumber,
      subject_cn: c.subjectCN,
      not_before: c.notBefore.toISOString(),
      not_after: c.notAfter.toISOString(),
    };
    // the stored bytes still hash to the digests recorded at acceptance
    if (v.envelopeDigest !== r.envelope_digest)
      return { ...out, error: `ENVELOPE_DIGEST_MISMATCH: stored ${r.envelope_digest}, the bytes hash to ${v.envelopeDigest}` };
    if (v.payloadDigest !== r.payload_digest)
      return { ...out, error: `PAYLOAD_DIGEST_MISMATCH: stored ${r.payload_digest}, the bytes hash to ${v.payloadDigest}` };
    return { ...out, verified: true };
  } catch (e) {
    if (!isReleaseError(e)) throw e;
    return { ...out, error: `${e.code}: ${e.message}` };
  }
}
