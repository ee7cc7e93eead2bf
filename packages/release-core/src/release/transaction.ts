import type { Digest } from '../digest.js';
import type { ReleasePayload } from './types.js';

export interface TransactionMember {
  component: string;
  /** index of the component's group in activation.ordered_groups */
  group: number;
  /** global 0-based activation order across all groups */
  position: number;
  kind: string;
  digest: Digest;
}

/**
 * The members of a release transaction in activation order (spec §3 rule 3: assignment
 * metadata carries the member count and the group and position from
 * activation.ordered_groups). Takes a validated payload: every component is in exactly one group.
 */
export function transactionMembers(payload: ReleasePayload): TransactionMember[] {
  const byName = new Map(payload.components.map((c) => [c.name, c]));
  const out: TransactionMember[] = [];
  payload.activation.ordered_groups.forEach((group, g) => {
    for (const name of group) {
      const c = byName.get(name);
      if (!c) throw new TypeError(`activation names unknown component ${name}: validate the payload first`);
      out.push({ component: name, group: g, position: out.length, kind: c.kind, digest: c.digest });
    }
  });
  return out;
}
