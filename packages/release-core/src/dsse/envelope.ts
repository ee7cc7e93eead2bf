import { canonicalize } from '../encoding/jcs.js';
import { fromBase64Strict, fromUtf8, utf8 } from '../encoding/bytes.js';

const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
const NodeBuffer: typeof Buffer | undefined = (globalThis as { Buffer?: typeof Buffer }).Buffer;
import { ReleaseError } from '../errors.js';
import { LIMITS } from '../limits.js';
import { defaultCryptoProvider } from '#crypto/default';
import type { CryptoProvider } from '../crypto/provider.js';
import { type Digest, isDigest, sha256Digest } from '../digest.js';
import { pae } from './pae.js';

export interface Signature {
  keyid: string;
  sig: string;
}

/** contracts §1: `{"payloadType", "payload": base64, "signatures": [{"keyid", "sig"}]}` */
export interface Envelope {
  payloadType: string;
  payload: string;
  signatures: Signature[];
}

export interface ParseEnvelopeOptions {
  /** Cap on the serialized envelope; default LIMITS.releaseEnvelopeBytes. */
  maxBytes?: number;
  /** Accepted payload types; default: both svc types. */
  payloadTypes?: readonly string[];
}

const KNOWN_TYPES = ['svc.release.v1', 'svc.release-receipt.v1'] as const;

function malformed(why: string): ReleaseError<'ENVELOPE_MALFORMED'> {
  return new ReleaseError('ENVELOPE_MALFORMED', `malformed envelope: ${why}`);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function exactKeys(obj: Record<string, unknown>, keys: readonly string[], where: string): void {
  for (const k of Object.keys(obj)) if (!keys.includes(k)) throw malformed(`${where}: unknown field "${k}"`);
  for (const k of keys) if (!(k in obj)) throw malformed(`${where}: missing field "${k}"`);
}

/**
 * Strict envelope parsing: bytes or text are size-capped before JSON.parse; exactly
 * the three DSSE fields; canonical base64; a known payload type; at least one signature, each
 * with a well-formed key id, and no key id twice (a threshold must count distinct keys).
 * The payload is NOT decoded into JSON here: that happens only after a signature verified.
 */
export function parseEnvelope(input: string | Uint8Array | unknown, opts: ParseEnvelopeOptions = {}): Envelope {
  const maxBytes = opts.maxBytes ?? LIMITS.releaseEnvelopeBytes;
  let value: unknown = input;
  if (input instanceof Uint8Array || typeof input === 'string') {
    const size = typeof input === 'string' ? input.length : input.length;
    // A string's UTF-8 length is at least its UTF-16 length, so this pre-check is safe.
    if (size > maxBytes) throw new ReleaseError('SIZE_LIMIT', `envelope is ${size} bytes, over the ${maxBytes}-byte limit`);
    let text: string;
    try {
      text = typeof input === 'string' ? input : fromUtf8(input);
    } catch {
      throw malformed('not valid UTF-8');
    }
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw malformed(`not JSON (${(e as Error).message})`);
    }
  }
  if (!isPlainObject(value)) throw malformed('expected a JSON object');
  exactKeys(value, ['payloadType', 'payload', 'signatures'], 'envelope');
  const { payloadType, payload, signatures } = value;
  if (typeof payloadType !== 'string') throw malformed('payloadType: expected a string');
  if (typeof payload !== 'string') throw malformed('payload: expected a base64 string');
  if (!Array.isArray(signatures)) throw malformed('signatures: expected an array');
  // Objects handed in directly were never size-checked as text: bound the big field here.
  if (payload.length > maxBytes) throw new ReleaseError('SIZE_LIMIT', `payload is ${payload.length} base64 characters, over the ${maxBytes}-byte limit`);
  const types = opts.payloadTypes ?? KNOWN_TYPES;
  if (!types.includes(payloadType))
    throw new ReleaseError('PAYLOAD_TYPE_UNKNOWN', `unknown payloadType ${JSON.stringify(payloadType)} (expected ${types.join(' or ')})`);
  const payloadBytes = fromBase64Strict(payload);
  if (payloadBytes === undefined) throw malformed('payload: not canonical standard base64 with padding');
  if (signatures.length === 0) throw new ReleaseError('SIGNATURES_EMPTY', 'envelope has no signatures');
  if (signatures.length > LIMITS.signatures)
    throw new ReleaseError('SIZE_LIMIT', `envelope has ${signatures.length} signatures, over the limit of ${LIMITS.signatures}`);
  const seen = new Set<string>();
  const sigs: Signature[] = signatures.map((s, i) => {
    const where = `signatures[${i}]`;
    if (!isPlainObject(s)) throw malformed(`${where}: expected an object`);
    exactKeys(s, ['keyid', 'sig'], where);
    if (!isDigest(s.keyid)) throw malformed(`${where}.keyid: expected sha256:<64 lowercase hex>`);
    if (typeof s.sig !== 'string' || s.sig.length === 0 || fromBase64Strict(s.sig) === undefined)
      throw malformed(`${where}.sig: not canonical standard base64 with padding`);
    if (seen.has(s.keyid)) throw new ReleaseError('SIGNATURE_DUPLICATE_KEYID', `${where}.keyid: key id ${s.keyid} appears twice`);
    seen.add(s.keyid);
    return { keyid: s.keyid, sig: s.sig };
  });
  const env: Envelope = Object.freeze({ payloadType, payload, signatures: Object.freeze(sigs.map((s) => Object.freeze(s))) as Signature[] });
  parsedParts.set(env, { payload: payloadBytes });
  return env;
}

/*
 * parseEnvelope already decoded (and validated) the payload; verification needs the bytes
 * again, and from them the PAE message, the signature bytes and two digests. The parsed
 * envelope is frozen, so each of these is a function of the object: it is computed on first
 * use and remembered with the object (a WeakMap, so it dies with the envelope). Verifying the
 * same parsed envelope again (the agent on each check, a verifier with several keys) then costs
 * the signature check and the release rules, not a decode, a copy and two SHA-256 passes.
 * Nothing here is a verdict: every signature is checked on every call.
 */
interface ParsedParts {
  readonly payload: Uint8Array;
  pae?: Uint8Array;
  signatures?: (Uint8Array | undefined)[];
  /** digests, remembered for one provider (the one that computed them) */
  digests?: { crypto: CryptoProvider; payload?: Digest; envelope?: Digest };
}
const parsedParts = new WeakMap<Envelope, ParsedParts>();

/** The payload bytes of an envelope returned by parseEnvelope; undefined for any other object. */
export function parsedPayloadBytes(env: Envelope): Uint8Array | undefined {
  return parsedParts.get(env)?.payload;
}

/** PAE(payloadType, payload) of a parsed envelope (callers must not change it); undefined for any other object. */
export function parsedPae(env: Envelope): Uint8Array | undefined {
  const parts = parsedParts.get(env);
  if (!parts) return undefined;
  return (parts.pae ??= pae(env.payloadType, parts.payload));
}

/** The decoded bytes of signature `i` of a parsed envelope (callers must not change them). */
export function parsedSignatureBytes(env: Envelope, i: number): Uint8Array | undefined {
  const parts = parsedParts.get(env);
  if (!parts) return fromBase64Strict(env.signatures[i]!.sig);
  parts.signatures ??= [];
  if (!(i in parts.signatures)) parts.signatures[i] = fromBase64Strict(env.signatures[i]!.sig);
  return parts.signatures[i];
}

function digestsOf(parts: ParsedParts, crypto: CryptoProvider): { crypto: CryptoProvider; payload?: Digest; envelope?: Digest } {
  if (parts.digests?.crypto !== crypto) parts.digests = { crypto };
  return parts.digests;
}

/** sha256 over the payload bytes; remembered for an envelope returned by parseEnvelope. */
export function payloadDigest(env: Envelope, payload: Uint8Array, crypto: CryptoProvider = defaultCryptoProvider): Digest {
  const parts = parsedParts.get(env);
  if (!parts || parts.payload !== payload) return sha256Digest(payload, crypto);
  const d = digestsOf(parts, crypto);
  return (d.payload ??= sha256Digest(payload, crypto));
}

/** contracts §1: JCS(envelope), exactly the bytes of the published TUF target. */
export function envelopeBytes(env: Envelope): Uint8Array {
  // A parsed envelope has only ASCII base64 and key ids, so the JCS text can be written
  // directly (keys in UTF-16 order: payload < payloadType < signatures, keyid < sig); this
  // runs on every verification and the generic canonicalizer walks the whole payload string.
  if (parsedParts.has(env) && !LONE_SURROGATE.test(env.payloadType)) {
    let sigs = '';
    for (const s of env.signatures) sigs += `${sigs ? ',' : ''}{"keyid":"${s.keyid}","sig":"${s.sig}"}`;
    const text = `{"payload":"${env.payload}","payloadType":${JSON.stringify(env.payloadType)},"signatures":[${sigs}]}`;
    // all ASCII unless the payload type has non-ASCII characters: latin1 is then the same bytes, faster
    return NodeBuffer && /^[\x20-\x7e]*$/.test(env.payloadType) ? NodeBuffer.from(text, 'latin1') : utf8(text);
  }
  return canonicalize({ payloadType: env.payloadType, payload: env.payload, signatures: env.signatures.map((s) => ({ keyid: s.keyid, sig: s.sig })) });
}

/** contracts §1: sha256 over JCS(envelope). */
export function envelopeDigest(env: Envelope, crypto: CryptoProvider = defaultCryptoProvider): Digest {
  const parts = parsedParts.get(env);
  if (!parts) return sha256Digest(envelopeBytes(env), crypto);
  const d = digestsOf(parts, crypto);
  return (d.envelope ??= sha256Digest(envelopeBytes(env), crypto));
}
