import { normalizeUuid } from '@svc/release-core';
import type { Db } from '../../store/tx.js';
import { rolloutById } from '../rollouts/queries.js';
import type { RolloutDelivery } from './schemas.js';
import { deploymentBundleStreams, deploymentDeliveries, deploymentDeliveryTotals, deploymentDeltas } from './queries.js';

const DELTA_STATES = ['queued', 'building', 'ready', 'skipped', 'failed'] as const;

/** A rollout's delivery view (docs/delta-updates.md "Operator view"): delta progress and reported deliveries, one page of them. */
export async function rolloutDelivery(db: Db, tenant: string, id: string, page: { limit: number; offset: number }): Promise<RolloutDelivery | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  const r = await rolloutById(db, tenant, uuid);
  if (!r) return undefined;
  const [deltas, totals, deliveries, streams] = await Promise.all([
    deploymentDeltas(db, tenant, r.deployment_id),
    deploymentDeliveryTotals(db, tenant, r.deployment_id),
    deploymentDeliveries(db, tenant, r.deployment_id, page.limit, page.offset),
    deploymentBundleStreams(db, tenant, r.deployment_id, page.limit, page.offset),
  ]);
  const counts = Object.fromEntries(DELTA_STATES.map((s) => [s, deltas.filter((d) => d.state === s).length])) as Record<(typeof DELTA_STATES)[number], number>;
  return {
    rollout_id: r.id,
    deltas: {
      ...counts,
      items: deltas.map((d) => ({
        component: d.component,
        devices: d.devices,
        source_digest: d.source_digest,
        target_digest: d.target_digest,
        state: d.state,
        target: d.target_path,
        length: d.delta_length === null ? null : Number(d.delta_length),
        full_length: Number(d.target_length),
        build_ms: d.build_ms,
        error: d.error,
      })),
    },
    totals,
    deliveries: deliveries.rows.map((d) => ({
      device: d.device_name,
      receipt_id: d.receipt_id,
      component: d.component,
      method: d.method,
      bytes_transferred: Number(d.bytes_transferred),
      full_length: Number(d.full_length),
      source_digest: d.source_digest,
      fallback: d.fallback,
      attempts: d.attempts,
      resumes: d.resumes,
      failure: d.failure,
      failure_detail: d.failure_detail,
      reported_at: d.reported_at.toISOString(),
    })),
    deliveries_total: deliveries.total,
    bundle_streams: streams.rows.map((b) => ({
      device: b.device_name,
      component: b.component,
      bytes_sent: b.bytes_sent,
      requests: b.requests,
      ranged_requests: b.ranged_requests,
      first_at: b.first_at.toISOString(),
      last_at: b.last_at.toISOString(),
    })),
    bundle_streams_total: streams.total,
  };
}
