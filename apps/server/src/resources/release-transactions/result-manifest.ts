/**
 * Deterministic per-device result manifests of a release transaction (spec §4:
 * `/release-transactions/{id}/result`): every member by rollout id, artifact id, digest and
 * ordered position; devices sorted by name. The output is RFC 8785 canonical JSON built in
 * chunks, so the same evidence always yields the same bytes and a 100k-device transaction is
 * streamed instead of held as one string. Top-level keys are emitted in JCS order
 * ("devices" < "members" < "release_id" < "transaction_id").
 */
import { canonicalize } from '@svc/release-core';
import type { DeviceState } from '../rollouts/states.js';

export interface ManifestMember {
  rollout_id: string;
  artifact_id: string;
  component: string;
  digest: string;
  group: number;
  position: number;
}

/** What an accepted receipt said about one member (contracts §3 `members[]`, or the single component). */
export interface MemberOutcome {
  verdict: string;
  resulting_digest: string | null;
  previous_digest: string | null;
}

export interface DeviceResult {
  device: string;
  state: DeviceState;
  receipt_envelope_digest: string | null;
  /** outcome per component name; absent until a receipt was accepted */
  outcomes: Record<string, MemberOutcome> | null;
}

const enc = new TextEncoder();

export function deviceManifest(members: ManifestMember[], r: DeviceResult): Uint8Array {
  const ordered = [...members].sort((a, b) => a.position - b.position);
  return canonicalize({
    device: r.device,
    state: r.state,
    receipt_envelope_digest: r.receipt_envelope_digest,
    members: ordered.map((m) => {
      const o = r.outcomes?.[m.component];
      return {
        ...m,
        verdict: o?.verdict ?? null,
        previous_digest: o?.previous_digest ?? null,
        resulting_digest: o?.resulting_digest ?? null,
      };
    }),
  });
}

/**
 * The whole document as chunks. `devices` must already be sorted by name (UTF-16 order, the
 * JS default and the SQL `COLLATE "C"` order for the ASCII device-name pattern of contracts §4).
 */
export async function* resultManifestChunks(
  head: { transaction_id: string; release_id: string; members: ManifestMember[] },
  devices: AsyncIterable<DeviceResult> | Iterable<DeviceResult>,
): AsyncGenerator<Uint8Array> {
  yield enc.encode('{"devices":[');
  let first = true;
  let last: string | undefined;
  for await (const d of devices) {
    // the stable order is part of the contract: refuse to emit an unsorted document
    if (last !== undefined && !(last < d.device)) throw new Error(`result manifest: devices out of order at ${d.device}`);
    last = d.device;
    if (!first) yield enc.encode(',');
    first = false;
    yield deviceManifest(head.members, d);
  }
  const members = [...head.members].sort((a, b) => a.position - b.position);
  yield enc.encode('],"members":');
  yield canonicalize(members);
  yield enc.encode(',"release_id":');
  yield canonicalize(head.release_id);
  yield enc.encode(',"transaction_id":');
  yield canonicalize(head.transaction_id);
  yield enc.encode('}');
}
