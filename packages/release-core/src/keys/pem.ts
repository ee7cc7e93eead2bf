import { ReleaseError } from '../errors.js';
import { fromBase64Strict, toBase64 } from '../encoding/bytes.js';

/**
 * RFC 7468 PEM: the DER bytes of exactly one block with the given label (`CERTIFICATE`,
 * `PUBLIC KEY`, `PRIVATE KEY`). Line breaks (LF or CRLF) inside are ignored; anything else
 * (another label, trailing data, non-canonical base64) is refused with `code`, by default
 * CERT_INVALID for a certificate and KEY_INVALID for anything else.
 */
export function decodePem(
  pem: string,
  label: string,
  code: 'KEY_INVALID' | 'CERT_INVALID' = label === 'CERTIFICATE' ? 'CERT_INVALID' : 'KEY_INVALID',
): Uint8Array {
  if (typeof pem !== 'string') throw new ReleaseError(code, `expected a PEM string (${label})`);
  const begin = `-----BEGIN ${label}-----`;
  const end = `-----END ${label}-----`;
  const text = pem.trim();
  if (!text.startsWith(begin)) {
    const other = /^-----BEGIN ([A-Z0-9 ]+)-----/.exec(text);
    throw new ReleaseError(code, other ? `expected a PEM "${label}" block, got "${other[1]}"` : `not a PEM "${label}" block`);
  }
  const endAt = text.indexOf(end);
  if (endAt < 0 || text.slice(endAt + end.length).trim() !== '') throw new ReleaseError(code, `PEM "${label}" block is not terminated or has trailing data`);
  const body = text.slice(begin.length, endAt).replace(/[\r\n\t ]/g, '');
  const der = fromBase64Strict(body);
  if (!der || der.length === 0) throw new ReleaseError(code, `PEM "${label}" body is not valid base64`);
  return der;
}

/** RFC 7468 PEM text of DER bytes: base64 in lines of 64 characters, LF line ends, a final LF. */
export function encodePem(der: Uint8Array, label: string): string {
  const b64 = toBase64(der);
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 64) lines.push(b64.slice(i, i + 64));
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}
