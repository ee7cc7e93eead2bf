import { LIMITS, parseEnvelope, verifyRelease, type PublicKey } from '@svc/release-core';
import type { ReleaseSettings } from '../config.js';
import { AgentError } from '../errors.js';
import type { SignedAssignment } from './assignment.js';
import { planMembers } from './members.js';
import type { DesiredState } from '../journal/tx-data.js';

export type VerifiedAssignment = { status: 'complete'; desired: DesiredState } | { status: 'waiting'; missing: string[] };

/**
 * Verifies the envelope bytes against the locally pinned keys (spec §5 rule 8) with the device's
 * tenant, product, profile, the validity window and the offline age (spec §8), then checks
 * the assigned member set against the signed one. Bytes first, then parse.
 */
export function verifyAssignment(
  a: SignedAssignment,
  opts: { settings: ReleaseSettings; trustedKeys: PublicKey[]; now: Date; lastOnlineAt: Date | null; kinds: string[] },
): VerifiedAssignment {
  let verified: ReturnType<typeof verifyRelease>;
  try {
    const env = parseEnvelope(a.envelope, { maxBytes: LIMITS.releaseEnvelopeBytes });
    verified = verifyRelease(env, {
      trustedKeys: opts.trustedKeys,
      tenant: opts.settings.tenant,
      product: opts.settings.product,
      profile: opts.settings.profile,
      now: opts.now,
      // Never contacted the server before: it is delivering this assignment right now.
      lastOnlineAt: opts.lastOnlineAt ?? opts.now,
    });
  } catch (cause) {
    const code = (cause as { code?: string }).code ?? 'UNKNOWN';
    throw new AgentError('RELEASE_REFUSED', `release refused (${code}): ${(cause as Error).message}`, { cause, field: 'envelope' });
  }
  const { payload } = verified;
  const plan = planMembers(payload, a);
  if (plan.status === 'waiting') return plan;
  for (const m of plan.members) {
    if (!opts.kinds.includes(m.kind)) {
      throw new AgentError('MEMBER_KIND_UNSUPPORTED', `no driver on this device for ${m.kind} (component ${m.component})`, {
        field: `components.${m.component}.kind`,
      });
    }
  }
  return {
    status: 'complete',
    desired: {
      kind: 'signed',
      tenant: payload.tenant,
      release: {
        product: payload.product,
        version: payload.release.version,
        payload_digest: verified.payloadDigest,
        envelope_digest: verified.envelopeDigest,
      },
      transaction: { id: a.transactionId, member_count: a.memberCount },
      members: plan.members,
      health: payload.health,
    },
  };
}
