import { fromBase64Strict } from '../encoding/bytes.js';
import { ReleaseError } from '../errors.js';
import { IDENTIFIER_PATTERNS as P } from '../identifiers.js';
import { Checker, join } from '../schema/checker.js';
import { LIMITS } from '../limits.js';
import { isCachedCertificateText } from '../x509/cache.js';
import type { ReceiptPayload } from './types.js';

const SLOT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const BASE = ['tenant', 'device', 'release', 'activation', 'health', 'timestamp'];
const SINGLE = ['rollout', 'candidate_digest', 'previous_digest', 'resulting_digest'];
const TX_KEYS = [...BASE, 'transaction', 'members'];
const SINGLE_KEYS = [...BASE, ...SINGLE];
const SINGLE_OPTIONAL = ['os'];

/**
 * Validate an `svc.release-receipt.v1` payload (contracts §3), including the outcome rules
 * that hold without the release: an "activated" result runs its candidates, a rollback runs
 * the previous digests, an unhealthy result is never "activated". Every bad field at once,
 * RECEIPT_INVALID with issues.
 */
export function validateReceiptPayload(value: unknown): ReceiptPayload {
  const c = new Checker();
  const isTx = typeof value === 'object' && value !== null && Object.hasOwn(value, 'transaction');
  const p = isTx ? c.object(value, '', TX_KEYS) : c.object(value, '', SINGLE_KEYS, SINGLE_OPTIONAL);
  if (p) {
    c.string(p.tenant, 'tenant', { pattern: P.uuid, what: 'tenant UUID (lowercase)' });
    const dev = c.object(p.device, 'device', ['name', 'certificate']);
    if (dev) {
      c.string(dev.name, 'device.name', { pattern: P.deviceName, what: 'device name' });
      const cert = c.string(dev.certificate, 'device.certificate', { max: 22000 });
      // a certificate verifyReceipt just decoded from this text is known canonical: not decoded twice
      if (cert !== undefined && !isCachedCertificateText(cert) && !fromBase64Strict(cert))
        c.add('device.certificate', 'not canonical standard base64 with padding');
    }
    const rel = c.object(p.release, 'release', ['product', 'version', 'payload_digest', 'envelope_digest']);
    if (rel) {
      c.string(rel.product, 'release.product', { pattern: P.product, what: 'product id' });
      c.string(rel.version, 'release.version', { pattern: P.version, what: 'version' });
      c.digest(rel.payload_digest, 'release.payload_digest');
      c.digest(rel.envelope_digest, 'release.envelope_digest');
    }
    const activation = c.oneOf(p.activation, 'activation', ['activated', 'rolled-back', 'failed'] as const);
    const health = c.oneOf(p.health, 'health', ['healthy', 'unhealthy', 'not-checked'] as const);
    c.timestamp(p.timestamp, 'timestamp');
    if (activation === 'activated' && health === 'unhealthy')
      c.add('activation', 'an unhealthy result cannot be "activated": a failed health check rolls back');
    if (isTx) checkTransaction(c, p, activation);
    else {
      c.string(p.rollout, 'rollout', { pattern: P.id, max: 128, what: 'rollout id' });
      const cand = c.digest(p.candidate_digest, 'candidate_digest');
      const prev = nullableDigest(c, p.previous_digest, 'previous_digest');
      const res = nullableDigest(c, p.resulting_digest, 'resulting_digest');
      outcome(c, '', activation, cand, prev, res);
      if (p.os !== undefined) checkOs(c, p.os);
    }
  }
  if (c.issues.length > 0) {
    const first = c.issues[0]!;
    const more = c.issues.length > 1 ? ` (and ${c.issues.length - 1} more)` : '';
    throw new ReleaseError('RECEIPT_INVALID', `invalid receipt: ${first.path}: ${first.message}${more}`, { issues: c.issues });
  }
  return value as ReceiptPayload;
}

function nullableDigest(c: Checker, v: unknown, path: string): string | null | undefined {
  return v === null ? null : c.digest(v, path);
}

/** resulting digest agrees with the outcome; `undefined` = already reported as malformed */
function outcome(c: Checker, at: string, result: string | undefined, cand: unknown, prev: unknown, res: unknown): void {
  if (cand === undefined || prev === undefined || res === undefined) return;
  if ((result === 'activated' || result === 'committed') && res !== cand) c.add(join(at, 'resulting_digest'), `must equal candidate_digest when ${result}`);
  if ((result === 'rolled-back' || result === 'not-attempted') && res !== prev)
    c.add(join(at, 'resulting_digest'), `must equal previous_digest when ${result}`);
}

function checkTransaction(c: Checker, p: Record<string, unknown>, activation: string | undefined): void {
  const tx = c.object(p.transaction, 'transaction', ['id', 'member_count']);
  const count = tx ? c.integer(tx.member_count, 'transaction.member_count', 1, LIMITS.components) : undefined;
  if (tx) c.string(tx.id, 'transaction.id', { pattern: P.id, max: 128, what: 'transaction id' });
  const members = c.array(p.members, 'members', 1, LIMITS.components);
  if (!members) return;
  if (count !== undefined && members.length !== count) c.add('members', `has ${members.length} members, transaction.member_count is ${count}`);
  const seen = new Set<string>();
  let lastGroup = 0;
  const verdicts: string[] = [];
  members.forEach((m, i) => {
    const at = `members[${i}]`;
    const o = c.object(m, at, ['group', 'position', 'component', 'rollout', 'candidate_digest', 'previous_digest', 'resulting_digest', 'verdict']);
    if (!o) return;
    const group = c.integer(o.group, join(at, 'group'), 0, LIMITS.components);
    // spec §2.3 rule 3: ordered by position
    const pos = c.integer(o.position, join(at, 'position'), 0, LIMITS.components);
    if (pos !== undefined && pos !== i) c.add(join(at, 'position'), `is ${pos}, members must be ordered by position (expected ${i})`);
    if (group !== undefined) {
      if (group < lastGroup) c.add(join(at, 'group'), `group ${group} after group ${lastGroup}: members must follow activation order`);
      lastGroup = group;
    }
    const name = c.string(o.component, join(at, 'component'), { pattern: P.componentName, what: 'component name' });
    if (name !== undefined) {
      if (seen.has(name)) c.add(join(at, 'component'), `component ${JSON.stringify(name)} appears twice`);
      seen.add(name);
    }
    c.string(o.rollout, join(at, 'rollout'), { pattern: P.id, max: 128, what: 'rollout id' });
    const cand = c.digest(o.candidate_digest, join(at, 'candidate_digest'));
    const prev = nullableDigest(c, o.previous_digest, join(at, 'previous_digest'));
    const res = nullableDigest(c, o.resulting_digest, join(at, 'resulting_digest'));
    const verdict = c.oneOf(o.verdict, join(at, 'verdict'), ['committed', 'rolled-back', 'failed', 'not-attempted'] as const);
    if (verdict) verdicts.push(verdict);
    outcome(c, at, verdict, cand, prev, res);
  });
  // spec §3 rule 4: the transaction commits as a whole or every attempted member is restored
  if (activation === 'activated' && verdicts.some((v) => v !== 'committed')) c.add('activation', '"activated" requires every member to be "committed"');
  if (activation !== 'activated' && activation !== undefined && verdicts.includes('committed'))
    c.add('activation', `a "${activation}" transaction cannot have a "committed" member`);
}

function checkOs(c: Checker, value: unknown): void {
  const keys = ['compatible', 'bundle_version', 'manifest_hash', 'previous_slot', 'installed_slot', 'booted_slot', 'bootloader_primary', 'mark', 'phase'];
  const o = c.object(value, 'os', keys);
  if (!o) return;
  c.string(o.compatible, 'os.compatible', { max: 256 });
  c.string(o.bundle_version, 'os.bundle_version', { max: 128 });
  c.string(o.manifest_hash, 'os.manifest_hash', { pattern: /^[0-9a-f]{64}$/, max: 64, what: 'sha256 hex manifest hash' });
  for (const k of ['previous_slot', 'installed_slot', 'bootloader_primary']) c.string(o[k], `os.${k}`, { pattern: SLOT, max: 64, what: 'slot name' });
  if (o.booted_slot !== null) c.string(o.booted_slot, 'os.booted_slot', { pattern: SLOT, max: 64, what: 'slot name' });
  c.oneOf(o.mark, 'os.mark', ['good', 'bad', 'active', 'none'] as const);
  c.string(o.phase, 'os.phase', { pattern: /^[a-z][a-z-]{0,31}$/, max: 32, what: 'lifecycle phase' });
}
