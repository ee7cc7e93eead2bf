import type { DeliveryReport } from '@svc/release-core';
import type { Db } from '../../store/tx.js';
import { deploymentComponents, insertDeliveries, receiptOwner } from './queries.js';

/**
 * Files a device's delivery report under the receipt it came with (docs/delta-updates.md). It is
 * device-reported telemetry, authenticated by the mTLS connection and not signed, so it is not
 * audited and never changes a state; members the receipt's transaction does not have are left
 * out. A re-upload of the same receipt keeps the first report.
 */
export async function recordDelivery(db: Db, args: { tenant: string; receiptId: string; report: DeliveryReport; now: Date }): Promise<void> {
  const owner = await receiptOwner(db, args.tenant, args.receiptId);
  if (owner === undefined) return;
  const known = new Set(await deploymentComponents(db, args.tenant, owner.deployment_id));
  await insertDeliveries(db, {
    tenant: args.tenant,
    receiptId: args.receiptId,
    deploymentId: owner.deployment_id,
    deviceName: owner.device_name,
    now: args.now,
    members: args.report.members
      .filter((m) => known.has(m.component))
      .map((m) => ({
        component: m.component,
        method: m.method,
        bytes_transferred: m.bytes_transferred,
        full_length: m.full_length,
        source_digest: m.source_digest ?? null,
        fallback: m.fallback ?? null,
        attempts: m.attempts ?? null,
        resumes: m.resumes ?? null,
        failure: m.failure ?? null,
        failure_detail: m.failure_detail ?? null,
      })),
  });
}
