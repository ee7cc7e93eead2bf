/**
 * Release transactions (spec §2 "Release transaction", spec §3, spec §4): a signed deployment
 * seen as the transaction its members are bound by. State is derived from accepted receipts
 * only (counters kept in the receipt's unit of work); the result document is deterministic
 * (result-manifest.ts).
 */
import { normalizeUuid } from '@svc/release-core';
import { notFound } from '../../errors/server-error.js';
import type { Db } from '../../store/tx.js';
import { transactionState, type DeviceState, type StateCounts } from '../rollouts/states.js';
import { membersOf, resultPage, transactionById, type TransactionRow } from './queries.js';
import type { TransactionView } from './schemas.js';
import { resultManifestChunks, type DeviceResult, type ManifestMember, type MemberOutcome } from './result-manifest.js';

function counts(d: TransactionRow): StateCounts {
  const terminal = d.n_committed + d.n_rolled_back + d.n_failed + d.n_installed + d.n_skipped;
  return {
    pending: d.device_count - terminal,
    committed: d.n_committed,
    'rolled back': d.n_rolled_back,
    failed: d.n_failed,
    installed: d.n_installed,
    skipped: d.n_skipped,
  };
}

export function transactionJson(d: TransactionRow, members: ManifestMember[]): TransactionView {
  const c = counts(d);
  return {
    id: d.id,
    release_id: d.release_id!,
    member_count: d.member_count,
    members: members.map((m) => ({
      rollout_id: m.rollout_id,
      component: m.component,
      group: m.group,
      position: m.position,
      artifact_id: m.artifact_id,
      digest: m.digest,
    })),
    state: transactionState(c, d.aborted_at !== null),
    group_id: d.group_id,
    snapshot_digest: d.snapshot_digest,
    aborted: d.aborted_at !== null,
    devices: { total: d.device_count, pending: c.pending, committed: c.committed, rolled_back: c['rolled back'], failed: c.failed, skipped: c.skipped },
    created_at: d.created_at.toISOString(),
  };
}

/** A page of transactions with their members (read in one query for the page). */
export async function transactionsJson(db: Db, rows: TransactionRow[]): Promise<TransactionView[]> {
  const members = await membersOf(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => transactionJson(r, members.get(r.id) ?? []));
}

export async function transactionDetail(db: Db, tenantId: string, id: string): Promise<TransactionView | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  const d = await transactionById(db, tenantId, uuid);
  if (!d) return undefined;
  return transactionJson(d, (await membersOf(db, [d.id])).get(d.id) ?? []);
}

const PAGE = 1000;

/** The deterministic result document, streamed in device-name order (keyset pages of 1000). */
export async function transactionResult(db: Db, tenantId: string, id: string): Promise<AsyncGenerator<Uint8Array>> {
  const t = await transactionDetail(db, tenantId, id);
  if (!t) throw notFound(`release transaction ${id}`);
  const members: ManifestMember[] = t.members.map((m) => ({
    rollout_id: m.rollout_id,
    artifact_id: m.artifact_id,
    component: m.component,
    digest: m.digest,
    group: m.group,
    position: m.position,
  }));
  async function* devices(): AsyncGenerator<DeviceResult> {
    let after = '';
    for (;;) {
      const rows = await resultPage(db, tenantId, t!.id, after, PAGE);
      for (const r of rows) {
        yield {
          device: r.device_name,
          state: r.state as DeviceState,
          receipt_envelope_digest: r.envelope_digest ?? null,
          outcomes: r.payload ? outcomesOf(r.payload, members) : null,
        };
      }
      if (rows.length < PAGE) return;
      after = rows[rows.length - 1]!.device_name;
    }
  }
  return resultManifestChunks({ transaction_id: t.id, release_id: t.release_id, members }, devices());
}

/** contracts §3: per-member outcomes of a receipt (multi-component `members[]`, or the single component). */
function outcomesOf(payload: Record<string, unknown>, members: ManifestMember[]): Record<string, MemberOutcome> {
  const out: Record<string, MemberOutcome> = {};
  const list = payload['members'];
  if (Array.isArray(list)) {
    for (const m of list as Record<string, unknown>[]) {
      out[String(m['component'])] = {
        verdict: String(m['verdict']),
        resulting_digest: (m['resulting_digest'] as string | null) ?? null,
        previous_digest: (m['previous_digest'] as string | null) ?? null,
      };
    }
    return out;
  }
  const only = members[0];
  if (only) {
    const activation = String(payload['activation']);
    const verdict = activation === 'activated' ? 'committed' : activation === 'rolled-back' ? 'rolled-back' : 'failed';
    out[only.component] = {
      verdict,
      resulting_digest: (payload['resulting_digest'] as string | null) ?? null,
      previous_digest: (payload['previous_digest'] as string | null) ?? null,
    };
  }
  return out;
}
