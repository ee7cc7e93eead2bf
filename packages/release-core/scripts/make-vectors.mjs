#!/usr/bin/env node
// Generates packages/release-core/vectors/*.json from the built package (run `pnpm build`
// first). Keys and certificates under vectors/keys/ are made once and reused, so Ed25519
// envelopes come out byte-identical on every run; ECDSA receipt signatures are randomized
// (as OpenSSL's are) and differ between runs. Test-only keys: never use them for anything else.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as rc from '../dist/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'vectors');
const keysDir = join(out, 'keys');
mkdirSync(keysDir, { recursive: true });
const tmp = mkdtempSync(join(tmpdir(), 'make-vectors-'));
const openssl = (...args) => execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
const b64 = (bytes) => Buffer.from(bytes).toString('base64');
const enc = new TextEncoder();

export const TENANT = '6f1c2a4e-8b3d-4c7a-9e2f-1a2b3c4d5e6f';
const OTHER_TENANT = '0b7d5a1e-2c3f-4a6b-8d9e-0f1a2b3c4d5e';
const PRODUCT = 'edge-gateway';
const DEVICE = 'edge-01';
const NOW = '2027-06-01T00:00:00Z';

// ---- keys (made once) ----
function keyFile(name, alg) {
  const p = join(keysDir, `${name}.key.pem`);
  if (!existsSync(p)) {
    const k = rc.generateKeyPair(alg);
    writeFileSync(p, k.pem);
    writeFileSync(join(keysDir, `${name}.pub.pem`), k.publicKey.pem);
  }
  return rc.parsePrivateKeyPem(readFileSync(p, 'utf8'));
}
const authorizer = keyFile('authorizer', 'ed25519');
const otherAuthorizer = keyFile('other-authorizer', 'ed25519');
keyFile('device-ca', 'p256');
keyFile('other-ca', 'p256');
const deviceKey = keyFile('device', 'p256');
keyFile('other-device', 'p256');

// ---- certificates (made once with the OpenSSL CLI) ----
function caCert(name, subject) {
  const p = join(keysDir, `${name}.cert.pem`);
  if (!existsSync(p))
    openssl(
      'req',
      '-x509',
      '-new',
      '-key',
      join(keysDir, `${name}.key.pem`),
      '-subj',
      subject,
      '-days',
      '3650',
      '-sha256',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-out',
      p,
    );
  return readFileSync(p, 'utf8');
}
function deviceCert(file, { key = 'device', ca = 'device-ca', cn = DEVICE, san = `URI:spiffe://${TENANT}/device/${DEVICE}`, days = '3650', extra = [] } = {}) {
  const p = join(keysDir, `${file}.cert.pem`);
  if (!existsSync(p)) {
    const csr = join(tmp, `${file}.csr`);
    const ext = join(tmp, `${file}.ext`);
    openssl('req', '-new', '-key', join(keysDir, `${key}.key.pem`), '-subj', `/CN=${cn}`, '-out', csr);
    writeFileSync(
      ext,
      [
        'basicConstraints=critical,CA:FALSE',
        'keyUsage=critical,digitalSignature',
        'extendedKeyUsage=clientAuth',
        ...(san ? [`subjectAltName=${san}`] : []),
        ...extra,
      ].join('\n') + '\n',
    );
    openssl(
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      join(keysDir, `${ca}.cert.pem`),
      '-CAkey',
      join(keysDir, `${ca}.key.pem`),
      '-CAcreateserial',
      '-CAserial',
      join(tmp, 'serial'),
      '-days',
      days,
      '-sha256',
      '-extfile',
      ext,
      '-out',
      p,
    );
  }
  return readFileSync(p, 'utf8');
}
const caPem = caCert('device-ca', '/O=svc test tenant/CN=svc device CA');
caCert('other-ca', '/O=svc other tenant/CN=svc device CA');
const deviceCertPem = deviceCert('device');
const badCerts = {
  'other-ca': deviceCert('device-other-ca', { ca: 'other-ca' }),
  'cn-mismatch': deviceCert('device-cn-mismatch', { cn: 'edge-02' }),
  'san-other-device': deviceCert('device-san-other-device', { cn: 'edge-02', san: `URI:spiffe://${TENANT}/device/edge-02` }),
  'san-other-tenant': deviceCert('device-san-other-tenant', { san: `URI:spiffe://${OTHER_TENANT}/device/${DEVICE}` }),
  'two-san-uris': deviceCert('device-two-san-uris', { san: `URI:spiffe://${TENANT}/device/${DEVICE},URI:spiffe://${TENANT}/device/edge-02` }),
  'no-san': deviceCert('device-no-san', { san: '' }),
  expired: deviceCert('device-expired', { days: '1' }),
  'other-key': deviceCert('device-other-key', { key: 'other-device' }),
};
const certDer = (pem) => rc.parseCertificatePem(pem).der;

// ---- release payloads ----
const hex = (s) => rc.sha256Digest(enc.encode(s)).slice(7);
function component(name, kind, i, extra = {}) {
  const digest = `sha256:${hex(`${name}-${i}`)}`;
  const version = `1.${i}.0`;
  return {
    name,
    kind,
    artifact: { id: `art-${name}-${i}`, name, version },
    target: `${name}/${version}/${name}.${kind === 'container' ? 'tar' : 'bin'}`,
    digest,
    length: 1000 + i,
    media_type: kind === 'container' ? 'application/vnd.oci.image.layer.v1.tar' : 'application/octet-stream',
    ...extra,
  };
}
function payload(components, groups, over = {}) {
  const targets = {};
  for (const c of components) targets[c.target] = { length: c.length, hashes: { sha256: c.digest.slice(7) } };
  return {
    tenant: TENANT,
    product: PRODUCT,
    release: { version: '2027.6.0', name: 'June release' },
    components,
    targets,
    compatibility: { profiles: ['linux-arm64', 'linux-amd64'] },
    activation: { ordered_groups: groups ?? [components.map((c) => c.name)] },
    health: {
      probes: [
        { name: 'service-up', type: 'command', command: ['/usr/bin/systemctl', 'is-active', 'edge-agent'], timeout_s: 30 },
        { name: 'http-ready', type: 'http', url: 'http://127.0.0.1:8080/healthz', timeout_s: 10, expect_status: 200 },
      ],
      timeout_s: 120,
    },
    rollout: {
      target_group: 'grp-field-eu',
      target_policy_digest: rc.targetPolicyDigest({ tenant: TENANT, group: 'grp-field-eu', members: [DEVICE, 'edge-02', 'edge-03'] }),
      waves: [
        { name: 'canary', count: 1, requires_approval: true },
        { name: 'rest', count: 3 },
      ],
      failure_threshold: { percent: 10 },
    },
    approvals: [{ system: 'jira', ref: 'OPS-1234', digest: `sha256:${hex('approval')}` }],
    recovery: { on_failure: 'rollback', rollback_boundary: 'release' },
    attestations: [{ predicate_type: 'https://slsa.dev/provenance/v1', digest: `sha256:${hex('provenance')}` }],
    validity: { not_before: '2026-01-01T00:00:00Z', not_after: '2036-01-01T00:00:00Z', max_offline_age_s: 2592000 },
    ...over,
  };
}
const single = payload([component('edge-app', 'container', 1)]);
const multi = payload(
  [
    component('edge-app', 'container', 1),
    component('detector', 'model', 2, { placement: { path: '/var/lib/edge/models/detector.onnx', mode: '0644' } }),
    component('edge-conf', 'config', 3, { placement: { path: '/etc/edge/edge.conf', mode: '0640', owner: 'root', group: 'edge' } }),
  ],
  [['edge-conf'], ['detector', 'edge-app']],
);
const osc = { ...component('rootfs', 'os-bundle', 4), target: 'rootfs/2027.6.0/rootfs.raucb', media_type: rc.RAUC_MEDIA_TYPE };
const os = payload([osc], [['rootfs']], { compatibility: { profiles: ['linux-arm64'] } });
const kinds = ['container', 'model', 'config', 'service-binary'];
const tenComps = Array.from({ length: 10 }, (_, i) => component(`svc-${i}`, kinds[i % 4], i + 10));
const ten = payload(tenComps, [tenComps.slice(0, 3).map((c) => c.name), tenComps.slice(3, 7).map((c) => c.name), tenComps.slice(7).map((c) => c.name)]);
for (const p of [single, multi, os, ten]) rc.validateReleasePayload(p);

const clone = (v) => JSON.parse(JSON.stringify(v));
const mut = (base, f) => {
  const c = clone(base);
  f(c);
  return c;
};
const badPayloads = [
  [
    'tenant not a UUID',
    mut(single, (p) => {
      p.tenant = 'acme';
    }),
    [['tenant', 'tenant UUID']],
  ],
  [
    'product pattern',
    mut(single, (p) => {
      p.product = 'Edge Gateway';
    }),
    [['product', 'product id']],
  ],
  [
    'release.version pattern',
    mut(single, (p) => {
      p.release.version = '-1';
    }),
    [['release.version', 'version']],
  ],
  [
    'unknown top-level key',
    mut(single, (p) => {
      p.extra = true;
    }),
    [['extra', 'unknown field']],
  ],
  [
    'missing validity',
    mut(single, (p) => {
      delete p.validity;
    }),
    [['validity', 'required field is missing']],
  ],
  [
    'missing recovery',
    mut(single, (p) => {
      delete p.recovery;
    }),
    [['recovery', 'required field is missing']],
  ],
  [
    'missing health',
    mut(single, (p) => {
      delete p.health;
    }),
    [['health', 'required field is missing']],
  ],
  [
    'missing ordered_groups',
    mut(single, (p) => {
      p.activation = {};
    }),
    [['activation.ordered_groups', 'required field is missing']],
  ],
  [
    'missing target_policy_digest',
    mut(single, (p) => {
      delete p.rollout.target_policy_digest;
    }),
    [['rollout.target_policy_digest', 'required field is missing']],
  ],
  [
    'no components',
    mut(single, (p) => {
      p.components = [];
      p.targets = {};
      p.activation.ordered_groups = [['x']];
    }),
    [['components', 'must not be empty']],
  ],
  [
    'refused kind package-manager',
    mut(multi, (p) => {
      p.components[1].kind = 'package-manager';
    }),
    [['components[1].kind', 'refused member kind "package-manager"']],
  ],
  ...['maintenance-window', 'min-agent', 'compose', 'os-package'].map((k) => [
    `refused kind ${k}`,
    mut(single, (p) => {
      p.components[0].kind = k;
    }),
    [['components[0].kind', `refused member kind "${k}"`]],
  ]),
  [
    'unknown kind',
    mut(single, (p) => {
      p.components[0].kind = 'firmware';
    }),
    [['components[0].kind', 'unknown kind']],
  ],
  [
    'duplicate component names',
    mut(multi, (p) => {
      p.components[2].name = 'edge-app';
    }),
    [['components[2].name', 'duplicate component name']],
  ],
  [
    'os-bundle next to another component',
    mut(multi, (p) => {
      p.components[0] = { ...osc, name: 'edge-app' };
      p.targets = {};
      for (const c of p.components) p.targets[c.target] = { length: c.length, hashes: { sha256: c.digest.slice(7) } };
    }),
    [['components[0].kind', 'only component']],
  ],
  [
    'os-bundle target without .raucb',
    mut(os, (p) => {
      const t = p.components[0].target;
      p.components[0].target = 'rootfs/2027.6.0/rootfs.img';
      p.targets['rootfs/2027.6.0/rootfs.img'] = p.targets[t];
      delete p.targets[t];
    }),
    [['components[0].target', '.raucb']],
  ],
  [
    'os-bundle media type',
    mut(os, (p) => {
      p.components[0].media_type = 'application/octet-stream';
    }),
    [['components[0].media_type', rc.RAUC_MEDIA_TYPE]],
  ],
  [
    'target missing from targets',
    mut(single, (p) => {
      p.targets = {};
    }),
    [['targets', 'missing the target']],
  ],
  [
    'extra target',
    mut(single, (p) => {
      p.targets['other/1/x'] = { length: 1, hashes: { sha256: hex('x') } };
    }),
    [['targets["other/1/x"]', 'is not the target of any component']],
  ],
  [
    'target length differs',
    mut(single, (p) => {
      Object.values(p.targets)[0].length = 5;
    }),
    [[`targets[${JSON.stringify(single.components[0].target)}].length`, 'differs from the component length']],
  ],
  [
    'target hash differs',
    mut(single, (p) => {
      Object.values(p.targets)[0].hashes.sha256 = hex('other');
    }),
    [[`targets[${JSON.stringify(single.components[0].target)}].hashes.sha256`, 'differs from the component digest']],
  ],
  [
    'bad component digest',
    mut(single, (p) => {
      p.components[0].digest = 'sha256:ABC';
    }),
    [['components[0].digest', 'digest']],
  ],
  [
    'empty profiles',
    mut(single, (p) => {
      p.compatibility.profiles = [];
    }),
    [['compatibility.profiles', 'must not be empty']],
  ],
  [
    'component in no group',
    mut(multi, (p) => {
      p.activation.ordered_groups = [['edge-conf'], ['detector']];
    }),
    [['activation.ordered_groups', 'component "edge-app" (components[0]) is in no group']],
  ],
  [
    'component in two groups',
    mut(multi, (p) => {
      p.activation.ordered_groups = [
        ['edge-conf', 'edge-app'],
        ['detector', 'edge-app'],
      ];
    }),
    [['activation.ordered_groups[1][1]', 'appears twice']],
  ],
  [
    'unknown name in group',
    mut(multi, (p) => {
      p.activation.ordered_groups[0].push('ghost');
    }),
    [['activation.ordered_groups[0][1]', 'names no component']],
  ],
  [
    'empty group',
    mut(multi, (p) => {
      p.activation.ordered_groups.push([]);
    }),
    [['activation.ordered_groups[2]', 'must not be empty']],
  ],
  [
    'multi linux without rollback',
    mut(multi, (p) => {
      p.recovery.on_failure = 'halt';
    }),
    [['recovery.on_failure', 'must be "rollback"']],
  ],
  [
    'multi linux with component boundary',
    mut(multi, (p) => {
      p.recovery.rollback_boundary = 'component';
    }),
    [['recovery.rollback_boundary', 'must be "release"']],
  ],
  [
    'validity reversed',
    mut(single, (p) => {
      p.validity.not_after = '2025-01-01T00:00:00Z';
    }),
    [['validity.not_after', 'must be later than not_before']],
  ],
  [
    'validity timestamp with offset',
    mut(single, (p) => {
      p.validity.not_before = '2026-01-01T00:00:00+02:00';
    }),
    [['validity.not_before', 'RFC 3339 UTC']],
  ],
  [
    'validity impossible date',
    mut(single, (p) => {
      p.validity.not_before = '2026-02-30T00:00:00Z';
    }),
    [['validity.not_before', 'not a real date']],
  ],
  [
    'max_offline_age_s zero',
    mut(single, (p) => {
      p.validity.max_offline_age_s = 0;
    }),
    [['validity.max_offline_age_s', 'out of range']],
  ],
  [
    'max_offline_age_s fractional',
    mut(single, (p) => {
      p.validity.max_offline_age_s = 1.5;
    }),
    [['validity.max_offline_age_s', 'expected an integer']],
  ],
  [
    'health probe type',
    mut(single, (p) => {
      p.health.probes[0].type = 'tcp';
    }),
    [['health.probes[0].type', 'is not one of "command", "http"']],
  ],
  [
    'health http probe without url',
    mut(single, (p) => {
      delete p.health.probes[1].url;
    }),
    [['health.probes[1].url', 'required field is missing']],
  ],
  [
    'waves not cumulative',
    mut(single, (p) => {
      p.rollout.waves = [{ percent: 50 }, { percent: 20 }];
    }),
    [['rollout.waves[1].percent', 'waves are cumulative']],
  ],
  [
    'wave with percent and count',
    mut(single, (p) => {
      p.rollout.waves = [{ percent: 50, count: 2 }];
    }),
    [['rollout.waves[0]', 'exactly one of']],
  ],
  [
    'approval without ref',
    mut(single, (p) => {
      delete p.approvals[0].ref;
    }),
    [['approvals[0].ref', 'required field is missing']],
  ],
  [
    'attestation bad digest',
    mut(single, (p) => {
      p.attestations[0].digest = 'md5:00';
    }),
    [['attestations[0].digest', 'digest']],
  ],
  [
    'too many components',
    mut(single, (p) => {
      p.components = Array.from({ length: 65 }, () => p.components[0]);
    }),
    [['components', 'at most 64']],
  ],
  [
    'several problems at once',
    mut(multi, (p) => {
      p.tenant = 'x';
      p.components[1].kind = 'package-manager';
      p.validity.max_offline_age_s = -1;
    }),
    [
      ['tenant', 'tenant UUID'],
      ['components[1].kind', 'refused member kind'],
      ['validity.max_offline_age_s', 'out of range'],
    ],
  ],
].map(([name, value, issues]) => ({ name, payload: value, code: 'PAYLOAD_INVALID', issues: issues.map(([path, message]) => ({ path, message })) }));
for (const b of badPayloads) {
  try {
    rc.validateReleasePayload(b.payload);
    throw new Error(`bad payload vector "${b.name}" validated`);
  } catch (e) {
    if (!rc.isReleaseError(e, 'PAYLOAD_INVALID')) throw e;
  }
}

// ---- release envelopes ----
const verifyOpts = { tenant: TENANT, product: PRODUCT, now: NOW };
const signBytes = (bytes, key = authorizer, type = rc.RELEASE_PAYLOAD_TYPE) => rc.signEnvelope(type, bytes, key);
const good = { single, multi, os, ten };
const goodEnvelopes = Object.entries(good).map(([name, p]) => {
  const envelope = rc.signRelease(p, authorizer);
  const v = rc.verifyRelease(envelope, { trustedKeys: [authorizer.publicKey], ...verifyOpts, now: new Date(NOW), profile: 'linux-arm64' });
  return { name, envelope, verify: { ...verifyOpts, profile: 'linux-arm64' }, payload_digest: v.payloadDigest, envelope_digest: v.envelopeDigest };
});
const env1 = goodEnvelopes[0].envelope;
const sig1 = env1.signatures[0];
const canonical = rc.canonicalize(single);
const badEnvelopes = [
  ['not an object', [1, 2], 'ENVELOPE_MALFORMED'],
  ['extra envelope field', { ...env1, extra: 1 }, 'ENVELOPE_MALFORMED'],
  ['missing payloadType', { payload: env1.payload, signatures: env1.signatures }, 'ENVELOPE_MALFORMED'],
  ['unknown payloadType', { ...env1, payloadType: 'application/vnd.in-toto+json' }, 'PAYLOAD_TYPE_UNKNOWN'],
  ['receipt payloadType', signBytes(canonical, authorizer, rc.RECEIPT_PAYLOAD_TYPE), 'PAYLOAD_TYPE_UNKNOWN'],
  ['payload base64 without padding', { ...env1, payload: b64(enc.encode('{"a":1}')).replace(/=+$/, '') }, 'ENVELOPE_MALFORMED'],
  ['payload base64url', { ...env1, payload: b64(enc.encode('{"a":"??>>"}')).replace(/\+/g, '-').replace(/\//g, '_') }, 'ENVELOPE_MALFORMED'],
  ['signature not base64', { ...env1, signatures: [{ ...sig1, sig: '***' }] }, 'ENVELOPE_MALFORMED'],
  ['empty signatures', { ...env1, signatures: [] }, 'SIGNATURES_EMPTY'],
  ['duplicate key ids', { ...env1, signatures: [sig1, sig1] }, 'SIGNATURE_DUPLICATE_KEYID'],
  ['signature with extra field', { ...env1, signatures: [{ ...sig1, cert: '' }] }, 'ENVELOPE_MALFORMED'],
  ['tampered payload', { ...env1, payload: b64(rc.canonicalize({ ...single, product: 'other' })) }, 'SIGNATURE_INVALID'],
  ['signature by an untrusted key', rc.signRelease(single, otherAuthorizer), 'KEY_UNTRUSTED'],
  ['payload not canonical (whitespace)', signBytes(enc.encode(JSON.stringify(single, null, 2))), 'PAYLOAD_NOT_CANONICAL'],
  ['payload not canonical (key order)', signBytes(enc.encode(JSON.stringify({ validity: single.validity, ...single }))), 'PAYLOAD_NOT_CANONICAL'],
  ['payload not JSON', signBytes(enc.encode('not json')), 'PAYLOAD_NOT_CANONICAL'],
  [
    'signed payload fails the schema',
    signBytes(rc.canonicalize({ ...single, components: [{ ...single.components[0], kind: 'package-manager' }] })),
    'PAYLOAD_INVALID',
  ],
  ['wrong tenant', rc.signRelease({ ...single, tenant: OTHER_TENANT }, authorizer), 'TENANT_MISMATCH'],
  ['wrong product', rc.signRelease({ ...single, product: 'other-product' }, authorizer), 'PRODUCT_MISMATCH'],
  ['not yet valid', rc.signRelease({ ...single, validity: { ...single.validity, not_before: '2027-06-01T00:06:00Z' } }, authorizer), 'NOT_YET_VALID'],
  [
    'expired',
    rc.signRelease({ ...single, validity: { ...single.validity, not_before: '2027-01-01T00:00:00Z', not_after: '2027-05-31T23:54:00Z' } }, authorizer),
    'EXPIRED',
  ],
].map(([name, envelope, code]) => ({ name, envelope, verify: verifyOpts, code }));
badEnvelopes.push(
  { name: 'wrong profile', envelope: rc.signRelease(os, authorizer), verify: { ...verifyOpts, profile: 'linux-amd64' }, code: 'PROFILE_INCOMPATIBLE' },
  { name: 'offline too long', envelope: env1, verify: { ...verifyOpts, lastOnlineAt: '2027-04-01T00:00:00Z' }, code: 'OFFLINE_AGE_EXCEEDED' },
);
for (const b of badEnvelopes) {
  const v = b.verify;
  try {
    rc.verifyRelease(b.envelope, {
      trustedKeys: [authorizer.publicKey],
      tenant: v.tenant,
      product: v.product,
      now: new Date(v.now),
      profile: v.profile,
      lastOnlineAt: v.lastOnlineAt ? new Date(v.lastOnlineAt) : undefined,
    });
    throw new Error(`bad envelope vector "${b.name}" verified`);
  } catch (e) {
    if (!rc.isReleaseError(e, b.code)) throw new Error(`bad envelope vector "${b.name}": expected ${b.code}, got ${e.code ?? e.message}`, { cause: e });
  }
}

// ---- receipts ----
const certB64 = (pem) => b64(certDer(pem));
const rel = Object.fromEntries(goodEnvelopes.map((g) => [g.name, g]));
const releaseRef = (g, p) => ({ product: p.product, version: p.release.version, payload_digest: g.payload_digest, envelope_digest: g.envelope_digest });
const TS = '2027-06-01T00:10:00Z';
const singleReceipt = {
  tenant: TENANT,
  device: { name: DEVICE, certificate: certB64(deviceCertPem) },
  release: releaseRef(rel.single, single),
  rollout: 'ro-single-1',
  candidate_digest: single.components[0].digest,
  previous_digest: null,
  resulting_digest: single.components[0].digest,
  activation: 'activated',
  health: 'healthy',
  timestamp: TS,
};
const multiMembers = rc.transactionMembers(multi);
const multiRollouts = Object.fromEntries(multiMembers.map((m) => [m.component, `ro-multi-${m.position}`]));
const multiReceipt = {
  tenant: TENANT,
  device: { name: DEVICE, certificate: certB64(deviceCertPem) },
  release: releaseRef(rel.multi, multi),
  activation: 'activated',
  health: 'healthy',
  timestamp: TS,
  transaction: { id: 'tx-0001', member_count: multiMembers.length },
  members: multiMembers.map((m) => ({
    group: m.group,
    position: m.position,
    component: m.component,
    rollout: multiRollouts[m.component],
    candidate_digest: m.digest,
    previous_digest: `sha256:${hex(`prev-${m.component}`)}`,
    resulting_digest: m.digest,
    verdict: 'committed',
  })),
};
const rolledBackReceipt = {
  ...multiReceipt,
  activation: 'rolled-back',
  health: 'unhealthy',
  members: multiReceipt.members.map((m, i) => ({
    ...m,
    resulting_digest: i < 2 ? m.previous_digest : m.previous_digest,
    verdict: i === 0 ? 'rolled-back' : i === 1 ? 'failed' : 'not-attempted',
  })),
};
rolledBackReceipt.members[1].resulting_digest = rolledBackReceipt.members[1].previous_digest;
const osReceipt = {
  tenant: TENANT,
  device: { name: DEVICE, certificate: certB64(deviceCertPem) },
  release: releaseRef(rel.os, os),
  rollout: 'ro-os-1',
  candidate_digest: os.components[0].digest,
  previous_digest: `sha256:${hex('rootfs-prev')}`,
  resulting_digest: os.components[0].digest,
  activation: 'activated',
  health: 'healthy',
  timestamp: TS,
  os: {
    compatible: 'edge-gateway-arm64',
    bundle_version: '2027.6.0',
    manifest_hash: hex('manifest'),
    previous_slot: 'rootfs.0',
    installed_slot: 'rootfs.1',
    booted_slot: 'rootfs.1',
    bootloader_primary: 'rootfs.1',
    mark: 'good',
    phase: 'committed',
  },
};
const receiptVerify = { tenant: TENANT, device: DEVICE, now: NOW };
const goodReceipts = [
  ['single', singleReceipt, 'single', { 'edge-app': 'ro-single-1' }, undefined],
  ['multi', multiReceipt, 'multi', multiRollouts, 'tx-0001'],
  ['multi-rolled-back', rolledBackReceipt, 'multi', multiRollouts, 'tx-0001'],
  ['os', osReceipt, 'os', { rootfs: 'ro-os-1' }, undefined],
].map(([name, payload, release, rollouts, transactionId]) => ({
  name,
  envelope: rc.signReceipt(payload, deviceKey),
  verify: receiptVerify,
  release,
  rollouts,
  transaction_id: transactionId,
}));
const withCert = (pem, over = {}) =>
  rc.signEnvelope(rc.RECEIPT_PAYLOAD_TYPE, rc.canonicalize({ ...singleReceipt, device: { name: DEVICE, certificate: certB64(pem) }, ...over }), deviceKey);
const otherDeviceKey = rc.parsePrivateKeyPem(readFileSync(join(keysDir, 'other-device.key.pem'), 'utf8'));
const r1 = goodReceipts[0].envelope;
const badReceipts = [
  ['tampered payload', { ...r1, payload: b64(rc.canonicalize({ ...singleReceipt, activation: 'failed' })) }, receiptVerify, 'SIGNATURE_INVALID'],
  ['signed by a key other than the certificate key', rc.signReceipt(singleReceipt, otherDeviceKey), receiptVerify, 'KEY_UNTRUSTED'],
  ['certificate from another CA', withCert(badCerts['other-ca']), receiptVerify, 'CERT_UNTRUSTED'],
  ['certificate CN differs from SAN device', withCert(badCerts['cn-mismatch']), receiptVerify, 'CERT_IDENTITY_MISMATCH'],
  [
    'certificate names another device',
    withCert(badCerts['san-other-device'], { device: { name: 'edge-02', certificate: certB64(badCerts['san-other-device']) } }),
    receiptVerify,
    'CERT_IDENTITY_MISMATCH',
  ],
  ['certificate names another tenant', withCert(badCerts['san-other-tenant']), receiptVerify, 'CERT_IDENTITY_MISMATCH'],
  ['certificate with two SAN URIs', withCert(badCerts['two-san-uris']), receiptVerify, 'CERT_IDENTITY_MISMATCH'],
  ['certificate without SAN', withCert(badCerts['no-san']), receiptVerify, 'CERT_IDENTITY_MISMATCH'],
  ['expired certificate', withCert(badCerts.expired), receiptVerify, 'CERT_EXPIRED'],
  ['certificate for another key', withCert(badCerts['other-key']), receiptVerify, 'KEY_UNTRUSTED'],
  [
    'certificate not DER',
    withCert(deviceCertPem, { device: { name: DEVICE, certificate: b64(enc.encode('not a certificate')) } }),
    receiptVerify,
    'CERT_INVALID',
  ],
  [
    'payload not canonical',
    rc.signEnvelope(rc.RECEIPT_PAYLOAD_TYPE, enc.encode(JSON.stringify(singleReceipt, null, 1)), deviceKey),
    receiptVerify,
    'PAYLOAD_NOT_CANONICAL',
  ],
  [
    'receipt names another device than its certificate',
    withCert(deviceCertPem, { device: { name: 'edge-02', certificate: certB64(deviceCertPem) } }),
    receiptVerify,
    'CERT_IDENTITY_MISMATCH',
  ],
  ['receipt for another tenant', withCert(deviceCertPem, { tenant: OTHER_TENANT }), receiptVerify, 'TENANT_MISMATCH'],
  ['expected another device', r1, { ...receiptVerify, device: 'edge-02' }, 'CERT_IDENTITY_MISMATCH'],
  ['connection certificate differs', r1, { ...receiptVerify, connectionCertificate: certB64(badCerts['other-key']) }, 'CERT_IDENTITY_MISMATCH'],
  ['activated but unhealthy', withCert(deviceCertPem, { health: 'unhealthy' }), receiptVerify, 'RECEIPT_INVALID'],
  [
    'activated with resulting = previous',
    withCert(deviceCertPem, { previous_digest: `sha256:${hex('p')}`, resulting_digest: `sha256:${hex('p')}` }),
    receiptVerify,
    'RECEIPT_INVALID',
  ],
  ['release payloadType', rc.signEnvelope(rc.RELEASE_PAYLOAD_TYPE, rc.canonicalize(singleReceipt), deviceKey), receiptVerify, 'PAYLOAD_TYPE_UNKNOWN'],
].map(([name, envelope, verify, code]) => ({ name, envelope, verify, code }));
const ca = rc.parseCertificatePem(caPem);
for (const b of badReceipts) {
  const v = b.verify;
  try {
    rc.verifyReceipt(b.envelope, {
      ca,
      tenant: v.tenant,
      device: v.device,
      now: new Date(v.now),
      connectionCertificate: v.connectionCertificate ? Buffer.from(v.connectionCertificate, 'base64') : undefined,
    });
    throw new Error(`bad receipt vector "${b.name}" verified`);
  } catch (e) {
    if (!rc.isReleaseError(e, b.code)) throw new Error(`bad receipt vector "${b.name}": expected ${b.code}, got ${e.code ?? e.message}`, { cause: e });
  }
}
// receipts that verify but do not match their signed rollout
const mm = (f) => {
  const c = clone(multiReceipt);
  f(c);
  return c;
};
const mismatches = [
  ['wrong rollout id', { ...singleReceipt, rollout: 'ro-other' }, 'single', { 'edge-app': 'ro-single-1' }, undefined, 'rollout'],
  [
    'wrong candidate digest',
    { ...singleReceipt, candidate_digest: `sha256:${hex('c')}`, resulting_digest: `sha256:${hex('c')}` },
    'single',
    { 'edge-app': 'ro-single-1' },
    undefined,
    'candidate_digest',
  ],
  [
    'wrong release version',
    { ...singleReceipt, release: { ...singleReceipt.release, version: '1.0.0' } },
    'single',
    { 'edge-app': 'ro-single-1' },
    undefined,
    'release.version',
  ],
  [
    'wrong envelope digest',
    { ...singleReceipt, release: { ...singleReceipt.release, envelope_digest: `sha256:${hex('e')}` } },
    'single',
    { 'edge-app': 'ro-single-1' },
    undefined,
    'release.envelope_digest',
  ],
  ['os release without os result', { ...osReceipt, os: undefined }, 'os', { rootfs: 'ro-os-1' }, undefined, 'os'],
  ['single receipt for a transaction', { ...singleReceipt, release: releaseRef(rel.multi, multi) }, 'multi', multiRollouts, 'tx-0001', 'transaction'],
  [
    'wrong transaction id',
    mm((r) => {
      r.transaction.id = 'tx-0002';
    }),
    'multi',
    multiRollouts,
    'tx-0001',
    'transaction.id',
  ],
  [
    'missing member',
    mm((r) => {
      r.members.pop();
      r.transaction.member_count = 2;
    }),
    'multi',
    multiRollouts,
    'tx-0001',
    'member_count',
  ],
  [
    'swapped members',
    mm((r) => {
      const [a, b] = [r.members[1], r.members[2]];
      r.members[1] = { ...b, position: 1 };
      r.members[2] = { ...a, position: 2 };
    }),
    'multi',
    multiRollouts,
    'tx-0001',
    'members[1].component',
  ],
  [
    'member rollout from another deployment',
    mm((r) => {
      r.members[2].rollout = 'ro-other';
    }),
    'multi',
    multiRollouts,
    'tx-0001',
    'members[2].rollout',
  ],
  [
    'member candidate digest',
    mm((r) => {
      r.members[0].candidate_digest = r.members[0].resulting_digest = `sha256:${hex('z')}`;
    }),
    'multi',
    multiRollouts,
    'tx-0001',
    'members[0].candidate_digest',
  ],
  [
    'member in the wrong group',
    mm((r) => {
      r.members[1].group = 0;
    }),
    'multi',
    multiRollouts,
    'tx-0001',
    'members[1].group',
  ],
].map(([name, payload, release, rollouts, transactionId, field]) => {
  const p = JSON.parse(JSON.stringify(payload));
  return {
    name,
    envelope: rc.signReceipt(p, deviceKey),
    verify: receiptVerify,
    release,
    rollouts,
    transaction_id: transactionId,
    code: 'RECEIPT_MISMATCH',
    field,
  };
});

// ---- write ----
const write = (file, value) => writeFileSync(join(out, file), `${JSON.stringify(value, null, 2)}\n`);
write('example-release.json', multi);
write('release-payloads.json', { tenant: TENANT, product: PRODUCT, good, bad: badPayloads });
write('release-envelopes.json', {
  trusted_keys: [authorizer.publicKey.pem],
  untrusted_keys: [otherAuthorizer.publicKey.pem],
  good: goodEnvelopes,
  bad: badEnvelopes,
});
write('receipts.json', { ca_pem: caPem, device_certificate_pem: deviceCertPem, good: goodReceipts, bad: badReceipts, mismatched: mismatches });
write(
  'target-policy.json',
  [
    {
      snapshot: { tenant: TENANT, group: 'grp-field-eu', members: ['edge-03', DEVICE, 'edge-02', DEVICE] },
      canonical: new TextDecoder().decode(rc.canonicalize({ tenant: TENANT, group: 'grp-field-eu', members: [DEVICE, 'edge-02', 'edge-03'] })),
    },
    {
      snapshot: { tenant: TENANT, group: 'g', members: ['b', 'a', '\u00e9', 'Z', '\u{1F600}', '\uFB33'] },
      canonical: new TextDecoder().decode(rc.canonicalize({ tenant: TENANT, group: 'g', members: ['Z', 'a', 'b', '\u00e9', '\u{1F600}', '\uFB33'] })),
    },
    { snapshot: { tenant: TENANT, group: 'empty', members: [] }, canonical: `{"group":"empty","members":[],"tenant":"${TENANT}"}` },
  ].map((v) => ({ ...v, digest: rc.targetPolicyDigest(v.snapshot) })),
);
rmSync(tmp, { recursive: true, force: true });
console.log(
  `vectors written to ${out}: ${badPayloads.length} bad payloads, ${badEnvelopes.length} bad envelopes, ${badReceipts.length} bad receipts, ${mismatches.length} mismatches`,
);
