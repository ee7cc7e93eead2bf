/**
 * Verifies a release envelope in the browser with @svc/release-core and its noble provider
 * (the same rules the server and the device apply: signature by a registered authorizer key,
 * canonical payload, schema, tenant, product, validity window). Loaded on demand by the
 * releases page, so the verifier is not part of the first page load.
 */
import { isReleaseError, nobleCryptoProvider, parsePublicKeyPem, verifyRelease, type PublicKey, type ReleasePayload } from '@svc/release-core';

export type Verdict =
  { ok: true; payload: ReleasePayload; payloadDigest: string; envelopeDigest: string; keyid: string } | { ok: false; code: string; message: string };

export function verifyInBrowser(envelope: unknown, authorizerPems: readonly string[], tenant: string, product: string, now = new Date()): Verdict {
  const keys: PublicKey[] = [];
  for (const pem of authorizerPems) {
    try {
      keys.push(parsePublicKeyPem(pem));
    } catch {
      // a key the browser cannot parse cannot have signed anything it verifies
    }
  }
  try {
    const v = verifyRelease(envelope, { trustedKeys: keys, tenant, product, now, crypto: nobleCryptoProvider });
    return { ok: true, payload: v.payload, payloadDigest: v.payloadDigest, envelopeDigest: v.envelopeDigest, keyid: v.keyid };
  } catch (e) {
    if (isReleaseError(e)) return { ok: false, code: e.code, message: e.message };
    return { ok: false, code: 'ERROR', message: e instanceof Error ? e.message : String(e) };
  }
}

/** The payload as the envelope carries it, decoded for display before (or without) verification. */
export function decodePayload(envelope: unknown): Partial<ReleasePayload> | undefined {
  const payload = typeof envelope === 'object' && envelope !== null ? (envelope as { payload?: unknown }).payload : undefined;
  if (typeof payload !== 'string') return undefined;
  try {
    const bytes = Uint8Array.from(atob(payload), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as Partial<ReleasePayload>;
  } catch {
    return undefined;
  }
}
