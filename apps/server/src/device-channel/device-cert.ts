import { createHash, createPrivateKey, createPublicKey, randomBytes, sign, verify, type KeyObject } from 'node:crypto';
import { invalidInput } from '../errors/server-error.js';
import { children, DerError, encodeTime, expectTag, octets, oid, readTlv, seq, TAG, tlv, value, whole, type Tlv } from '@svc/release-core/der';
import { SERVER_LIMITS } from '../limits.js';

/**
 * The device channel's per-request certificate work, in node:crypto and release-core's DER
 * reader and writer (`@svc/release-core/der`): reading a CSR (enrollment, renewal) and issuing
 * the device certificate (contracts §4).
 * @peculiar/x509 builds the same structures through a general ASN.1 schema engine and
 * webcrypto, at about 270 CSR+certificate pairs/s per core; this path does the same work at
 * several thousand per second (docs/device-channel.md "Enrollment"), so a core is not the
 * bound of enrollment. The signature is one ECDSA P-256 operation of about 50 µs: it runs
 * on the event loop, which a thread hand-off would cost more than it saves.
 * CAs themselves (rare) are still made with @peculiar/x509 (pki.ts, `@svc/release-core/x509`).
 */

const ECDSA_SHA256 = '1.2.840.10045.4.3.2';
const CN = '2.5.4.3';
const SKI = '2.5.29.14';
// AlgorithmIdentifier { ecdsa-with-SHA256 } (RFC 5758: no parameters)
const SIG_ALG = Buffer.from('300a06082a8648ce3d040302', 'hex');
const VERSION_3 = Buffer.from('a003020102', 'hex');
const EXT_BASIC_CONSTRAINTS_LEAF = Buffer.from('300c0603551d130101ff04023000', 'hex');
const EXT_KEY_USAGE_DIGITAL_SIGNATURE = Buffer.from('300e0603551d0f0101ff040403020780', 'hex');
const EXT_EKU_CLIENT_AUTH = Buffer.from('30130603551d25040c300a06082b06010505070302', 'hex');
const EXT_EKU_SERVER_AUTH = Buffer.from('30130603551d25040c300a06082b06010505070301', 'hex');
const OID_SAN = Buffer.from('0603551d11', 'hex');
const OID_AKI = Buffer.from('0603551d23', 'hex');
const OID_SKI = Buffer.from('0603551d0e', 'hex');
const OID_CN = Buffer.from('0603550403', 'hex');
// SubjectPublicKeyInfo of an uncompressed P-256 key up to its point: SEQUENCE { SEQUENCE {
// id-ecPublicKey, prime256v1 }, BIT STRING (no unused bits) 04 || x || y }
const P256_SPKI_HEAD = Buffer.from('3059301306072a8648ce3d020106082a8648ce3d030107034200', 'hex');
const P256_SPKI_LENGTH = P256_SPKI_HEAD.length + 65;

/** What a certificate is signed with: the CA's key, its subject (our issuer) and key id. */
export interface CertSigner {
  key: KeyObject;
  subjectDer: Uint8Array;
  keyId: Uint8Array;
}

/** The signer of a CA certificate (DER) and its PKCS#8 key (PEM). */
export function certSigner(caCertDer: Uint8Array, keyPem: string): CertSigner {
  const root = readTlv(caCertDer, 0);
  const tbs = children(caCertDer, expectTag(children(caCertDer, root)[0], TAG.SEQUENCE, 'tbsCertificate'));
  // [0] version, serial, signature, issuer, validity, subject
  const subject = expectTag(tbs[tbs[0]?.tag === 0xa0 ? 5 : 4], TAG.SEQUENCE, 'subject');
  const keyId = subjectKeyId(caCertDer, tbs);
  if (keyId === undefined) throw new DerError('CA certificate without a subject key identifier');
  return { key: createPrivateKey(keyPem), subjectDer: whole(caCertDer, subject), keyId };
}

/** The keyIdentifier of the first subjectKeyIdentifier extension (RFC 5280 4.2.1.2), if any. */
function subjectKeyId(der: Uint8Array, tbs: Tlv[]): Uint8Array | undefined {
  // extensions: [3] EXPLICIT SEQUENCE OF Extension { extnID, critical DEFAULT FALSE, extnValue }
  const wrapper = tbs.find((t) => t.tag === 0xa3);
  if (wrapper === undefined) return undefined;
  for (const ext of children(der, expectTag(children(der, wrapper)[0], TAG.SEQUENCE, 'extensions'))) {
    const parts = children(der, expectTag(ext, TAG.SEQUENCE, 'extension'));
    if (oid(der, expectTag(parts[0], TAG.OID, 'extnID')) !== SKI) continue;
    const extnValue = value(der, expectTag(parts[parts.length - 1], TAG.OCTET_STRING, 'extnValue'));
    return value(extnValue, expectTag(readTlv(extnValue, 0), TAG.OCTET_STRING, 'keyIdentifier')).slice();
  }
  return undefined;
}

/** A CSR checked the way the CA needs it. */
export interface CheckedCsr {
  commonName: string;
  /** SubjectPublicKeyInfo (DER) of an ECDSA P-256 key. */
  spki: Uint8Array;
}

function cnOf(der: Uint8Array, name: Tlv | undefined): string[] {
  const out: string[] = [];
  for (const rdn of children(der, expectTag(name, TAG.SEQUENCE, 'subject'))) {
    for (const atv of children(der, expectTag(rdn, TAG.SET, 'RDN'))) {
      const [type, text] = children(der, expectTag(atv, TAG.SEQUENCE, 'attribute'));
      if (oid(der, expectTag(type, TAG.OID, 'attribute type')) !== CN || text === undefined) continue;
      if (text.tag !== TAG.UTF8_STRING && text.tag !== TAG.PRINTABLE_STRING && text.tag !== TAG.IA5_STRING) throw new DerError('CN string type');
      out.push(Buffer.from(value(der, text)).toString('utf8'));
    }
  }
  return out;
}

/**
 * The ECDSA P-256 public key of a SubjectPublicKeyInfo (contracts §4: device identity keys are
 * P-256). The usual form, an uncompressed point under id-ecPublicKey and prime256v1, is told
 * by its bytes and imported from its coordinates (a JWK): OpenSSL's DER decoder and the curve
 * lookup cost about twice as much, and this is most of what reading a CSR costs. Anything else
 * (a compressed point, another curve or algorithm) goes through the DER decoder, which accepts
 * or names it. Either import refuses a point that is not on the curve.
 */
function p256Key(spki: Uint8Array, field: string): KeyObject {
  if (spki.length === P256_SPKI_LENGTH && P256_SPKI_HEAD.equals(spki.subarray(0, P256_SPKI_HEAD.length)) && spki[P256_SPKI_HEAD.length] === 0x04) {
    const point = Buffer.from(spki.buffer, spki.byteOffset + P256_SPKI_HEAD.length + 1, 64);
    try {
      return createPublicKey({
        key: { kty: 'EC', crv: 'P-256', x: point.subarray(0, 32).toString('base64url'), y: point.subarray(32).toString('base64url') },
        format: 'jwk',
      });
    } catch (cause) {
      throw invalidInput(field, `not a DER PKCS#10 certificate request (public key: ${String(cause)})`);
    }
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' });
  } catch (cause) {
    throw invalidInput(field, `not a DER PKCS#10 certificate request (public key: ${String(cause)})`);
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw invalidInput(field, `key must be ECDSA P-256, got ${key.asymmetricKeyType ?? '?'} ${key.asymmetricKeyDetails?.namedCurve ?? ''}`.trim());
  }
  return key;
}

/**
 * A CSR checked the way the CA needs it: DER within bounds, key ECDSA P-256, self-signature
 * valid (proof the requester holds the key), one CN. Returns the CN and the public key.
 */
export function readCsr(input: Uint8Array, field = 'csr_der'): CheckedCsr {
  const der = new Uint8Array(input);
  if (der.length === 0) throw invalidInput(field, `missing`);
  // spec §5 (bounded input): refuse oversized documents before parsing
  if (der.length > SERVER_LIMITS.csrBytes) throw invalidInput(field, `larger than ${SERVER_LIMITS.csrBytes} bytes`);
  let info: Uint8Array, spki: Uint8Array, sigAlg: string, signature: Uint8Array, cns: string[];
  try {
    const root = readTlv(der, 0);
    if (root.tag !== TAG.SEQUENCE || root.end !== der.length) throw new DerError('not one SEQUENCE');
    const [infoTlv, algTlv, sigTlv] = children(der, root);
    const parts = children(der, expectTag(infoTlv, TAG.SEQUENCE, 'certificationRequestInfo'));
    expectTag(parts[0], TAG.INTEGER, 'version');
    cns = cnOf(der, parts[1]);
    spki = whole(der, expectTag(parts[2], TAG.SEQUENCE, 'subjectPKInfo'));
    info = whole(der, infoTlv!);
    sigAlg = oid(der, expectTag(children(der, expectTag(algTlv, TAG.SEQUENCE, 'signatureAlgorithm'))[0], TAG.OID, 'algorithm'));
    const bits = value(der, expectTag(sigTlv, TAG.BIT_STRING, 'signature'));
    if (bits[0] !== 0) throw new DerError('signature has unused bits');
    signature = bits.subarray(1);
  } catch (cause) {
    throw invalidInput(field, `not a DER PKCS#10 certificate request (${cause instanceof Error ? cause.message : String(cause)})`);
  }
  const key = p256Key(spki, field);
  if (sigAlg !== ECDSA_SHA256) throw invalidInput(field, `signature cannot be checked (algorithm ${sigAlg}, expected ecdsa-with-SHA256)`);
  let ok: boolean;
  try {
    ok = verify('sha256', info, key, signature);
  } catch (cause) {
    throw invalidInput(field, `signature cannot be checked (${String(cause)})`);
  }
  if (!ok) throw invalidInput(field, `signature does not verify (requester does not hold the key)`);
  if (cns.length !== 1 || !cns[0]) throw invalidInput(field, `subject must have exactly one CN`);
  return { commonName: cns[0], spki };
}

export interface LeafOptions {
  subjectCN: string;
  /** SubjectPublicKeyInfo (DER). */
  spki: Uint8Array;
  usage: 'clientAuth' | 'serverAuth';
  sanUris: string[];
  notBefore: Date;
  notAfter: Date;
}

/** 16 random bytes, positive and minimal as a DER INTEGER (first byte 0x01..0x7f). */
function serialBytes(): Buffer {
  const b = randomBytes(16);
  b[0] = (b[0]! & 0x7f) | 0x01;
  return b;
}

/**
 * A leaf certificate signed by `ca`: the extensions @peculiar/x509 wrote for pki.ts's
 * `issueCertificate` (basicConstraints cA=false critical, keyUsage digitalSignature critical,
 * one extended key usage, SAN URIs, authority and subject key ids), in DER.
 */
export function issueLeaf(ca: CertSigner, o: LeafOptions): { der: Buffer; serial: string } {
  const serial = serialBytes();
  const spkiTlv = readTlv(o.spki, 0);
  const keyBits = value(o.spki, children(o.spki, spkiTlv)[1]!);
  const skid = createHash('sha1').update(keyBits.subarray(1)).digest();
  const san = seq(...o.sanUris.map((u) => tlv(0x86, Buffer.from(u, 'ascii'))));
  const extensions = tlv(
    0xa3,
    seq(
      EXT_BASIC_CONSTRAINTS_LEAF,
      EXT_KEY_USAGE_DIGITAL_SIGNATURE,
      o.usage === 'clientAuth' ? EXT_EKU_CLIENT_AUTH : EXT_EKU_SERVER_AUTH,
      seq(OID_SAN, octets(san)),
      seq(OID_AKI, octets(seq(tlv(0x80, ca.keyId)))),
      seq(OID_SKI, octets(tlv(0x04, skid))),
    ),
  );
  const tbs = seq(
    VERSION_3,
    tlv(0x02, serial),
    SIG_ALG,
    ca.subjectDer,
    seq(encodeTime(o.notBefore), encodeTime(o.notAfter)),
    seq(tlv(0x31, seq(OID_CN, tlv(0x0c, Buffer.from(o.subjectCN, 'utf8'))))),
    o.spki,
    extensions,
  );
  const signature = sign('sha256', tbs, ca.key);
  const der = seq(tbs, SIG_ALG, tlv(TAG.BIT_STRING, Uint8Array.of(0), signature));
  return { der: Buffer.from(der.buffer, der.byteOffset, der.length), serial: serial.toString('hex') };
}
