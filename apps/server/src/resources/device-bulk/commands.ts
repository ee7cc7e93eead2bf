/**
 * Bulk actions (docs/inventory.md "Bulk actions"): an operator names an action and a device
 * filter; the selection is frozen into the job when it is created (bounded by
 * `SERVER_LIMITS.devices.bulkSelection`), and the bulk-action job (jobs/device-bulk.ts) works it in
 * batches, each batch one unit of work as the operator who asked: the changes, each device's
 * outcome and its audit row commit together, so progress never claims what did not happen.
 */
import { IDENTIFIER_PATTERNS, normalizeUuid } from '@svc/release-core';
import { invalidInput, isServerError, notFound, ServerError } from '../../errors/server-error.js';
import { decommissionDevice, tagDevice, untagDevice } from '../devices/commands.js';
import { deviceFilterSql } from '../devices/filter/index.js';
import { getDeviceByName } from '../devices/queries/identity.js';
import { requestLogBundle } from '../log-requests/commands.js';
import { addGroupMembers, removeGroupMembers } from '../groups/commands.js';
import { existingDeviceNames, getGroup, memberNames } from '../groups/queries.js';
import type { Command, UnitOfWork } from '../unit-of-work.js';
import {
  BULK_ACTIONS,
  countSelection,
  finishBulkJob,
  insertBulkJob,
  insertBulkJobDevices,
  lockBulkJob,
  pendingDevices,
  recordOutcomes,
  selectionWhere,
  type BulkAction,
  type BulkJobRow,
  type BulkOutcome,
} from './queries.js';
import { SERVER_LIMITS, SERVER_TUNING } from '../../limits.js';

export interface BulkRequest {
  action: string;
  /** a device filter; optional when `devices` names the selection */
  filter?: string | undefined;
  /** names the devices one by one (narrowed by `filter` when both are given) */
  devices?: readonly string[] | undefined;
  group_id?: string | undefined;
  tag?: string | undefined;
  /** decommission: the typed confirmation, `decommission <n>` for a selection of n devices */
  confirm?: string | undefined;
}

/** POST /device-bulk-jobs: checks the request, freezes the selection, queues the job; audited. */
export const createBulkJob: Command<BulkRequest, BulkJobRow> = async (uow, req) => {
  if (!(BULK_ACTIONS as readonly string[]).includes(req.action)) throw invalidInput('action', `must be one of ${BULK_ACTIONS.join(', ')}`);
  const action = req.action as BulkAction;
  if (req.filter === undefined && req.devices === undefined) throw invalidInput('filter', 'required: a device filter, or devices naming the selection');
  if (req.devices !== undefined) {
    if (req.devices.length === 0) throw invalidInput('devices', 'empty: name at least one device, or leave devices out and give a filter');
    if (req.devices.length > SERVER_LIMITS.devices.bulkNames)
      throw invalidInput('devices', `names more than ${SERVER_LIMITS.devices.bulkNames} devices; use a filter`);
    const bad = req.devices.findIndex((n) => !IDENTIFIER_PATTERNS.deviceName.test(n));
    if (bad >= 0) throw invalidInput(`devices[${bad}]`, `must match ${IDENTIFIER_PATTERNS.deviceName.source}`);
  }
  const where = selectionWhere(req.filter === undefined ? undefined : deviceFilterSql(req.filter), req.devices);
  const params: Record<string, string> = {};
  if (action === 'tag' || action === 'untag') {
    if (req.tag === undefined || !IDENTIFIER_PATTERNS.deviceTag.test(req.tag)) throw invalidInput('tag', `must match ${IDENTIFIER_PATTERNS.deviceTag.source}`);
    params.tag = req.tag;
  }
  if (action === 'group.add' || action === 'group.remove') {
    const id = req.group_id === undefined ? undefined : normalizeUuid(req.group_id);
    const g = id === undefined ? undefined : await getGroup(uow.trx, uow.tenant, id);
    if (!g) throw new ServerError('GROUP_INVALID', `group_id: no group ${JSON.stringify(req.group_id ?? '')}`);
    if (g.filter !== null) throw new ServerError('GROUP_INVALID', `group_id: group ${g.id} is dynamic: its members follow its filter`);
    params.group_id = g.id;
  }
  const count = await countSelection(uow.trx, uow.tenant, where, SERVER_LIMITS.devices.bulkSelection);
  if (count > SERVER_LIMITS.devices.bulkSelection) {
    throw invalidInput('filter', `selects more than ${SERVER_LIMITS.devices.bulkSelection} devices, the most one bulk action takes; narrow it`);
  }
  if (count === 0) throw invalidInput(req.filter === undefined ? 'devices' : 'filter', 'selects no device: nothing to do');
  if (action === 'decommission' && req.confirm !== `decommission ${count}`) {
    throw invalidInput(
      'confirm',
      `type "decommission ${count}" to decommission the ${count} devices ${req.filter === undefined ? 'named' : 'this filter selects'}`,
    );
  }
  const id = await insertBulkJob(uow.trx, {
    tenantId: uow.tenant,
    action,
    filter: req.filter ?? '',
    params,
    actor: uow.actor.name,
    credential: uow.actor.credential,
    now: uow.now,
  });
  const total = await insertBulkJobDevices(uow.trx, id, uow.tenant, where, SERVER_LIMITS.devices.bulkSelection);
  await uow.audit({
    action: 'device.bulk.create',
    target: `device-bulk-job:${id}`,
    detail: { action, filter: req.filter ?? '', ...(req.devices === undefined ? {} : { named: req.devices.length }), ...params, total },
  });
  return (await lockBulkJob(uow.trx, id))!;
};

/** A device's outcome; `detail` says why it failed, or for `logs` names the log request made. */
type Outcome = { device: string; outcome: Exclude<BulkOutcome, 'pending'>; detail: string | null };

/**
 * One batch of a leased job: the next pending devices, each acted on and its outcome recorded
 * and audited (`device.bulk.<action>`, detail `{job, outcome}`); the last batch finishes the job
 * (`device.bulk.complete`). Answers the job after the batch, or undefined when the job is not
 * this owner's any more.
 */
export const runBulkBatch: Command<{ jobId: string; owner: string; leaseMs: number }, BulkJobRow | undefined> = async (uow, { jobId, owner, leaseMs }) => {
  const job = await lockBulkJob(uow.trx, jobId);
  if (!job || job.state !== 'running' || job.lease_owner !== owner) return undefined;
  const names = await pendingDevices(uow.trx, jobId, SERVER_TUNING.deviceBulkBatch);
  if (names.length === 0) {
    await finishBulkJob(uow.trx, jobId, uow.now);
    await uow.audit({
      action: 'device.bulk.complete',
      target: `device-bulk-job:${jobId}`,
      detail: { action: job.action, total: job.total, succeeded: job.succeeded, failed: job.failed },
    });
    return (await lockBulkJob(uow.trx, jobId))!;
  }
  const params = (typeof job.params === 'string' ? JSON.parse(job.params) : job.params) as Record<string, string>;
  const outcomes = await ACTIONS[job.action as BulkAction](uow, names, params);
  await recordOutcomes(uow.trx, jobId, outcomes, uow.now, new Date(uow.now.getTime() + leaseMs));
  await uow.auditMany(
    outcomes.map((o) => ({
      action: `device.bulk.${job.action}`,
      target: `device:${o.device}`,
      detail: { job: jobId, outcome: o.outcome, ...(o.detail === null ? {} : { detail: o.detail }) },
    })),
  );
  return (await lockBulkJob(uow.trx, jobId))!;
};

/** A refusal the action makes for one device becomes that device's failure; anything else fails the batch. */
async function each(names: string[], act: (name: string) => Promise<boolean>): Promise<Outcome[]> {
  const out: Outcome[] = [];
  for (const device of names) {
    try {
      out.push({ device, outcome: (await act(device)) ? 'succeeded' : 'unchanged', detail: null });
    } catch (e) {
      if (!isServerError(e)) throw e;
      out.push({ device, outcome: 'failed', detail: e.message });
    }
  }
  return out;
}

const ACTIONS: Record<BulkAction, (uow: UnitOfWork, names: string[], params: Record<string, string>) => Promise<Outcome[]>> = {
  tag: (uow, names, p) => each(names, async (name) => (await tagDevice(uow, { name, tag: p.tag! })).changed),
  untag: (uow, names, p) => each(names, async (name) => (await untagDevice(uow, { name, tag: p.tag! })).changed),
  decommission: (uow, names) =>
    each(names, async (name) => {
      const d = await getDeviceByName(uow.trx, uow.tenant, name);
      if (!d) throw notFound(`device ${JSON.stringify(name)}`);
      if (d.status === 'decommissioned') return false;
      await decommissionDevice(uow, { name });
      return true;
    }),
  // a request per device, handed over at its next heartbeat; the outcome names the request
  logs: async (uow, names) => {
    const out: Outcome[] = [];
    for (const device of names) {
      try {
        out.push({ device, outcome: 'succeeded', detail: `log request ${(await requestLogBundle(uow, { device })).id}` });
      } catch (e) {
        if (!isServerError(e)) throw e;
        out.push({ device, outcome: 'failed', detail: e.message });
      }
    }
    return out;
  },
  // one membership change (and one digest) per batch, not per device
  'group.add': async (uow, names, p) => {
    const exists = await existingDeviceNames(uow.trx, uow.tenant, names);
    const already = await memberNames(uow.trx, uow.tenant, p.group_id!, names);
    const add = names.filter((n) => exists.has(n) && !already.has(n));
    const failure = await groupChange(() => addGroupMembers(uow, { id: p.group_id!, devices: add }), add.length);
    return names.map((device) =>
      !exists.has(device)
        ? { device, outcome: 'failed' as const, detail: `device ${JSON.stringify(device)} not found` }
        : already.has(device)
          ? { device, outcome: 'unchanged' as const, detail: null }
          : failure === null
            ? { device, outcome: 'succeeded' as const, detail: null }
            : { device, outcome: 'failed' as const, detail: failure },
    );
  },
  'group.remove': async (uow, names, p) => {
    const members = await memberNames(uow.trx, uow.tenant, p.group_id!, names);
    const remove = names.filter((n) => members.has(n));
    const failure = await groupChange(() => removeGroupMembers(uow, { id: p.group_id!, devices: remove }), remove.length);
    return names.map((device) =>
      !members.has(device)
        ? { device, outcome: 'unchanged' as const, detail: null }
        : failure === null
          ? { device, outcome: 'succeeded' as const, detail: null }
          : { device, outcome: 'failed' as const, detail: failure },
    );
  },
};

/** A group change of a batch; a refusal (the group deleted or made unusable meanwhile) is every device's failure. */
async function groupChange(change: () => Promise<unknown>, n: number): Promise<string | null> {
  if (n === 0) return null;
  try {
    await change();
    return null;
  } catch (e) {
    if (!isServerError(e)) throw e;
    return e.message;
  }
}
