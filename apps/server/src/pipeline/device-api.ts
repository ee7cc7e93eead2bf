/**
 * The seam between the device channel and the release pipeline (docs/pipeline.md, the
 * device-channel engineer calls these from the gRPC handlers). Assignments are computed from
 * the database on every check-in; nothing lives in process memory.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../store/database.js';
import { recordAuditEvent } from '../audit/record.js';
import { isUuid } from '../resources/ids.js';
import { acceptReceiptImpl } from './receipts.js';
import { recordDeviceResult } from './receipts.js';
import { deviceStateFromLegacy } from './states.js';
import { ServerError } from '../errors/server-error.js';

export interface DeviceAssignment {
  rollout_id: string;
  kind: 'signed' | 'legacy';
  // signed-release pointer (spec 2.2/3): the device fetches the envelope through TUF and verifies it itself
  release?: { release_id: string; product: string; version: string; envelope_target: string; envelope_digest: string; payload_digest: string };
  transaction?: { id: string; member_count: number; members: { rollout_id: string; component: string; group: number; position: number }[] };
  // legacy artifact pointer (no release): stays distinguishable everywhere
  legacy?: { artifact_id: string; name: string; version: string; kind: string; target: string; digest: string; length: number };
}

/**
 * Work for a device now: deployments not aborted, whose wave holding the device is open,
 * and for which the device has not yet reported a terminal result. One assignment per
 * deployment; `rollout_id` is the member at position 0, and `transaction` always carries the
 * full member set with group and position (spec 3.3) - member_count 1 for one component.
 */
export async function listAssignments(db: Kysely<Database>, tenantId: string, deviceName: string, now: Date): Promise<DeviceAssignment[]> {
  void now; // assignments depend on stored state only; validity is checked by the device itself
  const deps = await db
    .selectFrom('deployment_devices as dd')
    .innerJoin('deployments as d', 'd.id', 'dd.deployment_id')
    .innerJoin('deployment_waves as w', (j) => j.onRef('w.deployment_id', '=', 'dd.deployment_id').onRef('w.idx', '=', 'dd.wave_idx'))
    .select(['d.id', 'd.kind', 'd.release_id', 'd.artifact_id', 'd.member_count', 'd.created_at'])
    .where('dd.tenant_id', '=', tenantId)
    .where('dd.device_name', '=', deviceName)
    .where('dd.state', '=', 'pending')
    .where('d.aborted_at', 'is', null)
    .where('w.state', '=', 'open')
    .orderBy('d.created_at')
    .orderBy('d.id')
    .execute();
  if (deps.length === 0) return [];
  const ids = deps.map((d) => d.id);
  const rollouts = await db.selectFrom('rollouts').select(['id', 'deployment_id', 'component', 'group_index', 'position']).where('deployment_id', 'in', ids).orderBy('position').execute();
  const releaseIds = deps.map((d) => d.release_id).filter((x): x is string => x !== null);
  const releases = releaseIds.length
    ? await db.selectFrom('releases').select(['id', 'product', 'version', 'target', 'envelope_digest', 'payload_digest']).where('id', 'in', releaseIds).execute()
    : [];
  const artifactIds = deps.map((d) => d.artifact_id).filter((x): x is string => x !== null);
  const artifacts = artifactIds.length
    ? await db.selectFrom('artifacts').select(['id', 'name', 'version', 'kind', 'target', 'digest', 'length']).where('id', 'in', artifactIds).execute()
    : [];
  return deps.map((d) => {
    const members = rollouts.filter((r) => r.deployment_id === d.id);
    const lead = members[0]!;
    if (d.kind === 'legacy') {
      const a = artifacts.find((x) => x.id === d.artifact_id)!;
      return {
        rollout_id: lead.id,
        kind: 'legacy' as const,
        legacy: { artifact_id: a.id, name: a.name, version: a.version, kind: a.kind, target: a.target, digest: a.digest, length: Number(a.length) },
      };
    }
    const rel = releases.find((x) => x.id === d.release_id)!;
    return {
      rollout_id: lead.id,
      kind: 'signed' as const,
      release: { release_id: rel.id, product: rel.product, version: rel.version, envelope_target: rel.target, envelope_digest: rel.envelope_digest, payload_digest: rel.payload_digest },
      transaction: {
        id: d.id,
        member_count: d.member_count,
        members: members.map((m) => ({ rollout_id: m.id, component: m.component, group: m.group_index, position: m.position })),
      },
    };
  });
}

export function acceptReceipt(
  db: Kysely<Database>,
  tenantId: string,
  args: { deviceName: string; connectionCertificateDer: Uint8Array; envelopeBytes: Uint8Array; now: Date },
): Promise<{ receipt_id: string; duplicate: boolean }> {
  return acceptReceiptImpl(db, tenantId, args);
}

/**
 * Legacy status (spec 2.3.6): device-reported, appended to an append-only table and labelled
 * `device-reported`; it moves the device's legacy progress but is never upgraded to evidence.
 */
export async function reportLegacyStatus(
  db: Kysely<Database>,
  tenantId: string,
  args: { deviceName: string; rolloutId: string; status: 'installed' | 'failed'; detail?: string; now: Date },
): Promise<void> {
  if (args.status !== 'installed' && args.status !== 'failed') throw new ServerError('ROLLOUT_INVALID', 'status: must be installed or failed');
  if (args.detail !== undefined && args.detail.length > 4096) throw new ServerError('ROLLOUT_INVALID', 'detail: at most 4096 characters');
  const r = isUuid(args.rolloutId)
    ? await db.selectFrom('rollouts').select(['id', 'deployment_id']).where('tenant_id', '=', tenantId).where('id', '=', args.rolloutId).where('kind', '=', 'legacy').executeTakeFirst()
    : undefined;
  if (!r) throw new ServerError('RECEIPT_UNEXPECTED', `rollout_id: no legacy rollout ${args.rolloutId} in this tenant`);
  await db.transaction().execute(async (trx) => {
    const d = await trx.selectFrom('deployments').select(['id', 'failure_threshold']).where('id', '=', r.deployment_id).forUpdate().executeTakeFirstOrThrow();
    const dd = await trx.selectFrom('deployment_devices').select(['wave_idx', 'state']).where('deployment_id', '=', d.id).where('device_name', '=', args.deviceName).executeTakeFirst();
    if (!dd) throw new ServerError('RECEIPT_UNEXPECTED', `device: ${args.deviceName} is not assigned to rollout ${args.rolloutId}`);
    await trx
      .insertInto('legacy_status_reports')
      .values({ tenant_id: tenantId, deployment_id: d.id, rollout_id: r.id, device_name: args.deviceName, status: args.status, detail: args.detail ?? null, reported_at: args.now })
      .execute();
    // the first terminal report counts; later reports are kept as history only
    if (dd.state === 'pending') await recordDeviceResult(trx, d, args.deviceName, dd.wave_idx, deviceStateFromLegacy(args.status), null, args.now);
    await recordAuditEvent(trx, {
      tenantId, actor: `device:${args.deviceName}`, credential: 'device', action: 'rollout.legacy-status', target: `rollout:${r.id}`, at: args.now,
      detail: { status: args.status, label: 'device-reported' },
    });
  });
}
