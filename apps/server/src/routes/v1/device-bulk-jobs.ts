import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { page } from '../../http/pagination.js';
import { ErrorResponses, iso, PageQuery, Strict } from '../../http/schemas.js';
import { createBulkJob } from '../../resources/device-bulk/commands.js';
import { BULK_ACTIONS, BULK_OUTCOMES, bulkJobDevices, getBulkJob, type BulkJobRow } from '../../resources/device-bulk/queries.js';
import { normalizeUuid } from '@svc/release-core';
import { BulkJob, BulkJobDevicePage, type BulkJobView } from '../../resources/device-bulk/schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

function jobJson(j: BulkJobRow): BulkJobView {
  const params = (typeof j.params === 'string' ? JSON.parse(j.params) : j.params) as Record<string, string>;
  return {
    id: j.id,
    action: j.action as (typeof BULK_ACTIONS)[number],
    filter: j.filter,
    group_id: params.group_id ?? null,
    tag: params.tag ?? null,
    state: j.state as 'queued' | 'running' | 'done' | 'failed',
    total: j.total,
    succeeded: j.succeeded,
    failed: j.failed,
    created_by: j.actor,
    created_at: iso(j.created_at),
    finished_at: iso(j.finished_at),
  };
}

const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });

/** Bulk actions on a filtered selection of devices (docs/inventory.md "Bulk actions"). */
export const deviceBulkJobsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  const jobOr404 = async (tenantId: string, id: string) => {
    const uuid = normalizeUuid(id);
    const j = uuid === undefined ? undefined : await getBulkJob(db, tenantId, uuid);
    if (!j) throw notFound(`bulk job ${id}`);
    return j;
  };

  app.post(
    '/device-bulk-jobs',
    {
      config: { permission: 'devices.write', summary: 'Start a bulk action on the devices a filter selects (background job; 202)' },
      schema: {
        body: Strict({
          action: Type.Enum(BULK_ACTIONS),
          filter: Type.Optional(Type.String({ description: 'a device filter (docs/device-filter.md); optional when devices names the selection' })),
          devices: Type.Optional(
            Type.Array(Type.String({ maxLength: 63 }), {
              maxItems: SERVER_LIMITS.devices.bulkNames,
              description: `names the devices one by one (at most ${SERVER_LIMITS.devices.bulkNames}); with filter, only those of them it selects`,
            }),
          ),
          group_id: Type.Optional(Type.String({ maxLength: 64, description: 'group.add, group.remove: a static group' })),
          tag: Type.Optional(Type.String({ maxLength: 63, description: 'tag, untag' })),
          confirm: Type.Optional(Type.String({ maxLength: 64, description: 'decommission: "decommission <n>", n the number of devices selected' })),
        }),
        response: { 202: BulkJob, ...ErrorResponses },
      },
    },
    async (request, reply) => reply.code(202).send(jobJson(await execute(ctx, request, createBulkJob, request.body))),
  );

  app.get(
    '/device-bulk-jobs/:id',
    {
      config: { permission: 'devices.read', summary: 'A bulk job and its progress' },
      schema: { params: IdParams, response: { 200: BulkJob, ...ErrorResponses } },
    },
    async (request) => jobJson(await jobOr404(principalOf(request).tenantId, request.params.id)),
  );

  app.get(
    '/device-bulk-jobs/:id/devices',
    {
      config: { permission: 'devices.read', summary: "A bulk job's devices and each one's outcome (name order)" },
      schema: {
        params: IdParams,
        querystring: Strict({ ...PageQuery, outcome: Type.Optional(Type.Enum(BULK_OUTCOMES)) }),
        response: {
          200: BulkJobDevicePage,
          ...ErrorResponses,
        },
      },
    },
    async (request) => {
      const j = await jobOr404(principalOf(request).tenantId, request.params.id);
      const { limit, offset } = page(request.query);
      const rows = await bulkJobDevices(db, j.id, request.query.outcome, limit, offset);
      return {
        devices: rows.map((r) => ({ name: r.device_name, outcome: r.outcome as (typeof BULK_OUTCOMES)[number], detail: r.detail, at: iso(r.at) })),
        limit,
        offset,
      };
    },
  );
};
