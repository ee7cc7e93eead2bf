/**
 * The rules a signed release is held to by the server, at submission and again at rollout
 * start (spec §4 "Release submission rules" and "Rollout start against a published release").
 */
import { normalizeUuid, parseEnvelope, validateReleasePayload, LIMITS, RELEASE_PAYLOAD_TYPE, type Envelope, type ReleasePayload } from '@svc/release-core';
import { ServerError } from '../../errors/server-error.js';
import type { Db } from '../../store/tx.js';
import { artifactsByIds } from './queries.js';

/** The TUF target path of a release envelope (docs/publish-and-deploy.md). */
export function releaseTargetPath(product: string, version: string): string {
  return `releases/${product}/${version}.dsse.json`;
}

/** A stored release envelope (verified at submission), parsed again. */
export function parseStoredEnvelope(bytes: Uint8Array): Envelope {
  return parseEnvelope(bytes, { maxBytes: LIMITS.releaseEnvelopeBytes, payloadTypes: [RELEASE_PAYLOAD_TYPE] });
}

/** The payload of a stored release envelope, checked against the schema again. */
export function storedReleasePayload(bytes: Uint8Array): ReleasePayload {
  return validateReleasePayload(JSON.parse(Buffer.from(parseStoredEnvelope(bytes).payload, 'base64').toString('utf8')));
}

/**
 * spec §4 prerequisites, also re-run at rollout start: every component names an artifact of
 * this tenant with the same name, version, digest, length, target, media type and kind.
 * Returns the artifact id of each component by name.
 */
export async function checkComponentArtifacts(db: Db, tenantId: string, payload: ReleasePayload): Promise<Map<string, string>> {
  const rows = await artifactsByIds(
    db,
    tenantId,
    payload.components.flatMap((c) => normalizeUuid(c.artifact.id) ?? []),
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  const out = new Map<string, string>();
  payload.components.forEach((c, i) => {
    const at = `components[${i}]`;
    const a = byId.get(c.artifact.id);
    if (!a) throw new ServerError('RELEASE_PREREQUISITE', `${at}.artifact.id: no artifact ${c.artifact.id} in this tenant (publish it first)`);
    const mismatch: [string, unknown, unknown][] = [
      ['artifact.name', c.artifact.name, a.name],
      ['artifact.version', c.artifact.version, a.version],
      ['digest', c.digest, a.digest],
      ['length', c.length, Number(a.length)],
      ['target', c.target, a.target],
      ['media_type', c.media_type, a.media_type],
      ['kind', c.kind, a.kind],
    ];
    for (const [field, signed, stored] of mismatch) {
      if (signed !== stored) {
        throw new ServerError('RELEASE_PREREQUISITE', `${at}.${field}: signed ${JSON.stringify(signed)} but artifact ${a.id} has ${JSON.stringify(stored)}`);
      }
    }
    out.set(c.name, a.id);
  });
  return out;
}

/**
 * spec §4 rule 3 and rollout start: the target group's snapshot digest now must be the one
 * signed into `rollout.target_policy_digest`; a changed membership refuses the release.
 */
export function checkTargetPolicyDigest(payload: ReleasePayload, group: { id: string; digest: string }): void {
  const signed = payload.rollout.target_policy_digest;
  if (group.digest !== signed) {
    throw new ServerError(
      'GROUP_CHANGED',
      `rollout.target_policy_digest: signed ${signed} but group ${group.id} is now ${group.digest} (membership changed; sign a new release)`,
    );
  }
}
