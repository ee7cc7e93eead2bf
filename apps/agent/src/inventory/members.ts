import type { TxContext } from '../journal/journal.js';
import { memberRecord } from '../journal/tx-data.js';
import type { InstalledMemberInfo } from './reporter.js';

/**
 * Each installed member as the journal knows it: per component, the newest transaction that
 * committed it (its release version, or `legacy`, and the digest it resulted in). A member
 * that a later transaction rolled back keeps the earlier commit. Device-reported facts for the
 * inventory; the evidence of what runs stays the signed receipts.
 */
export function installedMembers(txs: readonly TxContext[]): InstalledMemberInfo[] {
  const byComponent = new Map<string, InstalledMemberInfo>();
  for (const tx of txs) {
    const desired = tx.data.desired;
    for (const m of desired.members) {
      const rec = memberRecord(tx.data, m.component);
      if (rec.verdict !== 'committed' || rec.resulting_digest === null) continue;
      byComponent.set(m.component, { component: m.component, version: desired.release?.version ?? 'legacy', digest: rec.resulting_digest });
    }
  }
  return [...byComponent.values()];
}
