import { DerError, TAG, type Tlv, bitStringBytes, children, expectTag, latin1, oid, readWhole, text, time, value, whole } from '../encoding/der.js';
import { toHex } from '../encoding/bytes.js';
import { ReleaseError } from '../errors.js';
import { LIMITS } from '../limits.js';
import { publicKeyFromSpkiDer } from '../keys/keys.js';
import { decodePem } from '../keys/pem.js';
import type { PublicKey } from '../keys/types.js';

/**
 * A minimal X.509 v3 reader (RFC 5280) in pure TypeScript, so the noble path needs no
 * node:crypto: just the fields device identity needs. Anything it cannot read is CERT_INVALID.
 */
export interface Certificate {
  der: Uint8Array;
  /** the signed tbsCertificate bytes */
  tbs: Uint8Array;
  serialNumber: string;
  issuer: Uint8Array;
  subject: Uint8Array;
  issuerCN: string | undefined;
  /** the single subject common name ('' when absent) */
  subjectCN: string;
  sanUris: string[];
  notBefore: Date;
  notAfter: Date;
  publicKey: PublicKey;
  isCA: boolean;
  /** keyUsage bits when the extension is present */
  keyUsage: { digitalSignature: boolean; keyCertSign: boolean } | undefined;
  /** extendedKeyUsage purpose OIDs when the extension is present (RFC 5280 4.2.1.12) */
  extendedKeyUsage: string[] | undefined;
  /** OIDs of critical extensions this reader does not understand */
  unknownCriticalExtensions: string[];
  signatureAlgorithm: 'ecdsa-with-SHA256' | 'ed25519';
  signature: Uint8Array;
}

const OID_CN = '2.5.4.3';
const OID_BASIC_CONSTRAINTS = '2.5.29.19';
const OID_KEY_USAGE = '2.5.29.15';
const OID_SAN = '2.5.29.17';
const OID_EXT_KEY_USAGE = '2.5.29.37';
const SIG_ALGS: Record<string, Certificate['signatureAlgorithm']> = {
  '1.2.840.10045.4.3.2': 'ecdsa-with-SHA256',
  '1.3.101.112': 'ed25519',
};
/*
 * Parsed certificates by PEM text: the tenant CA is parsed from the same PEM again and again
 * (CLI, server per request), and parsing costs more than verifying a signature. Results are
 * frozen so sharing them is safe.
 */
const pemCache = new Map<string, Certificate>();

export function parseCertificatePem(pem: string): Certificate {
  const hit = typeof pem === 'string' ? pemCache.get(pem) : undefined;
  if (hit) return hit;
  const cert = Object.freeze(parseCertificateDer(decodePem(pem, 'CERTIFICATE', 'CERT_INVALID')));
  pemCache.set(pem, cert);
  if (pemCache.size > LIMITS.certificatePemCacheEntries) pemCache.delete(pemCache.keys().next().value!);
  return cert;
}

/**
 * One or more concatenated PEM `CERTIFICATE` blocks (a CA bundle: a tenant's current device
 * CA and the retired ones it still trusts), at most `LIMITS.deviceCaCertificates`. Text
 * outside the blocks (e.g. comment lines) is ignored, as OpenSSL does.
 */
export function parseCertificatesPem(pem: string): Certificate[] {
  if (typeof pem !== 'string') throw new ReleaseError('CERT_INVALID', 'expected a PEM string (CERTIFICATE)');
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) return [parseCertificatePem(pem)];
  if (blocks.length > LIMITS.deviceCaCertificates)
    throw new ReleaseError('SIZE_LIMIT', `${blocks.length} certificates, over the limit of ${LIMITS.deviceCaCertificates}`);
  return blocks.map((b) => parseCertificatePem(b));
}

export function parseCertificateDer(der: Uint8Array): Certificate {
  if (!(der instanceof Uint8Array)) throw new ReleaseError('CERT_INVALID', 'certificate: expected DER bytes');
  if (der.length > LIMITS.certificateBytes)
    throw new ReleaseError('SIZE_LIMIT', `certificate is ${der.length} bytes, over the ${LIMITS.certificateBytes}-byte limit`);
  try {
    return parse(der.slice());
  } catch (e) {
    if (e instanceof ReleaseError) throw new ReleaseError('CERT_INVALID', `certificate: ${e.message}`, { cause: e });
    throw new ReleaseError('CERT_INVALID', `certificate: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * The subjectPublicKeyInfo DER of a certificate, found by walking the tbsCertificate's first
 * fields only (no names, extensions or key are read or checked): for telling whether a key
 * parsed elsewhere is this certificate's key. CERT_INVALID when the bytes are not shaped so.
 */
export function certificateSpki(der: Uint8Array): Uint8Array {
  try {
    const [tbsT] = children(der, expectTag(readWhole(der), TAG.SEQUENCE, 'Certificate'));
    const f = children(der, expectTag(tbsT, TAG.SEQUENCE, 'tbsCertificate'));
    // [0] version (optional), serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
    return whole(der, expectTag(f[f[0]?.tag === 0xa0 ? 6 : 5], TAG.SEQUENCE, 'subjectPublicKeyInfo'));
  } catch (e) {
    throw new ReleaseError('CERT_INVALID', `certificate: ${(e as Error).message}`, { cause: e });
  }
}

function parse(der: Uint8Array): Certificate {
  const [tbsT, sigAlgT, sigT, ...rest] = children(der, expectTag(readWhole(der), TAG.SEQUENCE, 'Certificate'));
  if (rest.length) throw new DerError('Certificate has extra fields');
  const tbsSeq = expectTag(tbsT, TAG.SEQUENCE, 'tbsCertificate');
  const outerAlg = algorithm(der, expectTag(sigAlgT, TAG.SEQUENCE, 'signatureAlgorithm'));
  const signature = bitStringBytes(der, expectTag(sigT, TAG.BIT_STRING, 'signatureValue'));

  const f = children(der, tbsSeq);
  let i = 0;
  if (f[0]?.tag === 0xa0) {
    const v = value(der, readWhole(der, f[0].valueStart, f[0].end));
    if (v.length !== 1 || v[0]! > 2) throw new DerError('unsupported certificate version');
    i++;
  }
  const serial = expectTag(f[i++], TAG.INTEGER, 'serialNumber');
  const innerAlg = algorithm(der, expectTag(f[i++], TAG.SEQUENCE, 'signature'));
  // RFC 5280 4.1.1.2: the signed and unsigned algorithm fields must agree
  if (innerAlg !== outerAlg) throw new DerError('tbsCertificate.signature differs from signatureAlgorithm');
  const issuerT = expectTag(f[i++], TAG.SEQUENCE, 'issuer');
  const [nb, na, ...extraTimes] = children(der, expectTag(f[i++], TAG.SEQUENCE, 'validity'));
  if (!nb || !na || extraTimes.length) throw new DerError('validity must have two times');
  const subjectT = expectTag(f[i++], TAG.SEQUENCE, 'subject');
  const spkiT = expectTag(f[i++], TAG.SEQUENCE, 'subjectPublicKeyInfo');
  let isCA = false;
  let keyUsage: Certificate['keyUsage'];
  let extendedKeyUsage: string[] | undefined;
  const sanUris: string[] = [];
  const unknownCritical: string[] = [];
  for (; i < f.length; i++) {
    const t = f[i]!;
    if (t.tag === 0x81 || t.tag === 0x82) continue; // issuer/subject unique IDs: unused
    if (t.tag !== 0xa3) throw new DerError(`unexpected field tag 0x${t.tag.toString(16)} in tbsCertificate`);
    const seen = new Set<string>();
    for (const ext of children(der, readWhole(der, t.valueStart, t.end))) {
      const parts = children(der, expectTag(ext, TAG.SEQUENCE, 'Extension'));
      const id = oid(der, expectTag(parts[0], TAG.OID, 'extnID'));
      if (seen.has(id)) throw new DerError(`extension ${id} appears twice`);
      seen.add(id);
      let critical = false;
      let k = 1;
      if (parts[k]?.tag === TAG.BOOLEAN) critical = value(der, parts[k++]!)[0] === 0xff;
      const octets = expectTag(parts[k], TAG.OCTET_STRING, `extnValue of ${id}`);
      const inner = readWhole(der, octets.valueStart, octets.end);
      if (id === OID_BASIC_CONSTRAINTS) {
        const bc = children(der, expectTag(inner, TAG.SEQUENCE, 'basicConstraints'));
        isCA = bc[0]?.tag === TAG.BOOLEAN && value(der, bc[0])[0] === 0xff;
      } else if (id === OID_KEY_USAGE) {
        const v = value(der, expectTag(inner, TAG.BIT_STRING, 'keyUsage'));
        const bits = v[1] ?? 0;
        keyUsage = { digitalSignature: (bits & 0x80) !== 0, keyCertSign: (bits & 0x04) !== 0 };
      } else if (id === OID_EXT_KEY_USAGE) {
        extendedKeyUsage = children(der, expectTag(inner, TAG.SEQUENCE, 'extKeyUsage')).map((p) => oid(der, expectTag(p, TAG.OID, 'KeyPurposeId')));
      } else if (id === OID_SAN) {
        for (const gn of children(der, expectTag(inner, TAG.SEQUENCE, 'subjectAltName'))) {
          if (gn.tag === 0x86) sanUris.push(ascii(value(der, gn)));
        }
      } else if (critical) unknownCritical.push(id);
    }
  }
  const cns = commonNames(der, subjectT);
  if (cns.length > 1) throw new DerError('subject has more than one common name');
  return {
    der,
    tbs: whole(der, tbsSeq),
    serialNumber: toHex(value(der, serial)),
    issuer: whole(der, issuerT),
    subject: whole(der, subjectT),
    issuerCN: commonNames(der, issuerT)[0],
    subjectCN: cns[0] ?? '',
    sanUris,
    notBefore: time(der, nb),
    notAfter: time(der, na),
    publicKey: publicKeyFromSpkiDer(whole(der, spkiT)),
    isCA,
    keyUsage,
    extendedKeyUsage,
    unknownCriticalExtensions: unknownCritical,
    signatureAlgorithm: outerAlg,
    signature,
  };
}

function algorithm(der: Uint8Array, t: Tlv): Certificate['signatureAlgorithm'] {
  const [idT, ...params] = children(der, t);
  const id = oid(der, expectTag(idT, TAG.OID, 'algorithm'));
  const alg = SIG_ALGS[id];
  if (!alg) throw new DerError(`unsupported signature algorithm ${id} (ecdsa-with-SHA256 or Ed25519)`);
  // RFC 5758 3.2 / RFC 8410 3: parameters are absent for both
  if (params.length) throw new DerError(`signature algorithm ${id} must not have parameters`);
  return alg;
}

function commonNames(der: Uint8Array, name: Tlv): string[] {
  const out: string[] = [];
  for (const rdn of children(der, name)) {
    for (const atv of children(der, expectTag(rdn, TAG.SET, 'RelativeDistinguishedName'))) {
      const [typeT, valT] = children(der, expectTag(atv, TAG.SEQUENCE, 'AttributeTypeAndValue'));
      if (oid(der, expectTag(typeT, TAG.OID, 'attribute type')) === OID_CN && valT) out.push(text(der, valT));
    }
  }
  return out;
}

function ascii(bytes: Uint8Array): string {
  for (let i = 0; i < bytes.length; i++) if (bytes[i]! < 0x20 || bytes[i]! > 0x7e) throw new DerError('SAN URI has a non-printable byte');
  return latin1(bytes);
}
