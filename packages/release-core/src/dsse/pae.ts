import { utf8 } from '../encoding/bytes.js';

/**
 * DSSE v1 Pre-Authentication Encoding:
 * "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, lengths as ASCII decimal byte counts.
 * Signatures cover these bytes, never the base64 text, so the payload type is bound too.
 */
export function pae(payloadType: string, payload: Uint8Array): Uint8Array {
  const type = utf8(payloadType);
  const head = utf8(`DSSEv1 ${type.length} ${payloadType} ${payload.length} `);
  const out = new Uint8Array(head.length + payload.length);
  out.set(head, 0);
  out.set(payload, head.length);
  return out;
}
