import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { notFound, ServerError } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage, page } from '../../http/pagination.js';
import { ErrorResponses, iso, PageOf, PageQuery, Strict, Timestamp, Uuid } from '../../http/schemas.js';
import { decommissionDevice, deviceOr404, tagDevice, untagDevice } from '../../resources/devices/commands.js';
import { deviceFilterSql } from '../../resources/devices/filter/index.js';
import { storedInventory } from '../../resources/devices/inventory.js';
import { DEVICE_STATUSES } from '../../resources/devices/queries/identity.js';
import { DEVICE_SORTS, listDevices, type DeviceListItem } from '../../resources/devices/queries/list.js';
import { deviceCurrentRelease, deviceHistory, deviceInventory, deviceSoftware } from '../../resources/devices/queries/detail.js';
import { DeviceListAnchors } from '../../resources/devices/anchors.js';
import { DeviceSearchCache } from '../../resources/devices/search-cache.js';
import { requestLogBundle } from '../../resources/log-requests/commands.js';
import { getLogContent, getLogRequest } from '../../resources/log-requests/queries.js';
import { Device, DeviceCounts, DeviceDetail, TaggedDevice, type DeviceView } from '../../resources/devices/schemas.js';
import { LogRequest } from '../../resources/log-requests/schemas.js';
import { deviceLastDeliveries } from '../../resources/deltas/queries.js';
import { DeviceDeliveries } from '../../resources/deltas/schemas.js';

const NameParams = Strict({ name: Type.String({ maxLength: 63 }) });
const TagParams = Strict({ name: Type.String({ maxLength: 63 }), tag: Type.String({ maxLength: 63 }) });
const LogParams = Strict({ name: Type.String({ maxLength: 63 }), id: Uuid });

export function deviceJson(d: DeviceListItem): DeviceView {
  return {
    name: d.name,
    status: d.status as (typeof DEVICE_STATUSES)[number],
    profile: d.profile,
    agent_version: d.agent_version,
    last_seen: iso(d.last_seen),
    cert_fingerprint: d.cert_fingerprint,
    created_at: iso(d.created_at),
  };
}

/** spec §4: devices list (section 8 pagination), history, decommission, log requests. */
export const devicesRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  // Deep pages start from per-process anchors checked against the database's list version.
  const anchors = new DeviceListAnchors();
  // Repeated `q` searches reuse their page's names and total while the list version is theirs.
  const searches = new DeviceSearchCache();

  app.get(
    '/devices',
    {
      config: { permission: 'devices.read', summary: 'List devices (status, q, filter; sort; total, counts)' },
      schema: {
        querystring: Strict({
          ...PageQuery,
          status: Type.Optional(Type.Enum(DEVICE_STATUSES)),
          q: Type.Optional(Type.String({ maxLength: 100 })),
          filter: Type.Optional(
            Type.String({
              description:
                'a device filter (docs/device-filter.md), e.g. attributes.hw_model = "gw-3" and tags has "eu" and agent_version < "2.4.0"; a refusal is a 400 naming filter and the column',
            }),
          ),
          sort: Type.Optional(
            Type.Enum(DEVICE_SORTS, {
              description:
                'order of the list: name (default), last_seen or status, name breaking ties; a leading "-" reverses it exactly (never-seen devices come last by last_seen, first by -last_seen)',
            }),
          ),
        }),
        response: { 200: PageOf('devices', Device, DeviceCounts), ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const { limit, offset } = page(request.query);
      const { devicesJson, total, counts } = await listDevices(
        db,
        p.tenantId,
        {
          status: request.query.status,
          q: request.query.q,
          filter: request.query.filter === undefined ? undefined : { text: request.query.filter, where: deviceFilterSql(request.query.filter) },
          sort: request.query.sort,
          limit,
          offset,
        },
        anchors,
        searches,
      );
      // The database wrote the items' JSON (resources/devices/queries/list.ts); the rest are integers. A string
      // sent as application/json skips the response serializer; the schema above still
      // documents this body, and resources/devices/list.test.ts validates real pages against it.
      const body = `{"devices":${devicesJson},"total":${total},"limit":${limit},"offset":${offset},"counts":{"online":${counts.online},"offline":${counts.offline},"decommissioned":${counts.decommissioned}}}`;
      return reply.type('application/json; charset=utf-8').send(body as never); // typed as the schema's object; the text is that object
    },
  );

  app.get(
    '/devices/:name',
    {
      config: { permission: 'devices.read', summary: 'One device, its current release (member digests) and the software it runs by evidence source' },
      schema: { params: NameParams, response: { 200: DeviceDetail, ...ErrorResponses } },
    },
    async (request) => {
      const tenantId = principalOf(request).tenantId;
      const device = await deviceOr404(db, tenantId, request.params.name);
      const [current, software, inv] = await Promise.all([
        deviceCurrentRelease(db, tenantId, device.name),
        deviceSoftware(db, tenantId, device.name),
        deviceInventory(db, device.id),
      ]);
      return {
        ...deviceJson(device),
        current_release: current === null ? null : { ...current, accepted_at: iso(current.accepted_at) },
        software: software.map((s) => ({
          component: s.component,
          digest: s.digest,
          source: s.source,
          observed_at: iso(s.observed_at),
        })),
        inventory: storedInventory(inv?.inventory),
        tags: inv?.tags ?? [],
      };
    },
  );

  app.get(
    '/devices/:name/deliveries',
    {
      config: {
        permission: 'devices.read',
        summary: "A device's last delivery per member: path (full, delta, adaptive), bytes transferred against the full size, fallback, and its rollout",
      },
      schema: { params: NameParams, response: { 200: DeviceDeliveries, ...ErrorResponses } },
    },
    async (request) => {
      const tenantId = principalOf(request).tenantId;
      const device = await deviceOr404(db, tenantId, request.params.name);
      const rows = await deviceLastDeliveries(db, tenantId, device.name);
      return {
        device: device.name,
        members: rows.map((r) => ({
          component: r.component,
          rollout_id: r.rollout_id,
          transaction_id: r.deployment_id,
          receipt_id: r.receipt_id,
          method: r.method,
          bytes_transferred: r.bytes_transferred,
          full_length: r.full_length,
          source_digest: r.source_digest,
          fallback: r.fallback,
          attempts: r.attempts,
          resumes: r.resumes,
          failure: r.failure,
          reported_at: r.reported_at.toISOString(),
        })),
      };
    },
  );

  app.get(
    '/devices/:name/history',
    {
      config: { permission: 'devices.read', summary: 'Device history, newest first (counts by event)' },
      schema: {
        params: NameParams,
        querystring: Strict(PageQuery),
        response: {
          200: PageOf(
            'history',
            Type.Object({ at: Timestamp, event: Type.String(), detail: Type.Record(Type.String(), Type.Unknown()) }),
            Type.Record(Type.String(), Type.Integer(), { description: "entries per event over the device's whole history" }),
          ),
          ...ErrorResponses,
        },
      },
    },
    async (request) =>
      listPage(db, request.query, 'history', async (snap, { limit, offset }) => {
        const device = await deviceOr404(snap, principalOf(request).tenantId, request.params.name);
        const { rows, total, counts } = await deviceHistory(snap, device.id, limit, offset);
        return { items: rows.map((r) => ({ at: iso(r.at), event: r.event, detail: r.detail })), total, counts };
      }),
  );

  app.delete(
    '/devices/:name',
    {
      config: { permission: 'devices.write', summary: 'Decommission a device' },
      schema: { params: NameParams, response: { 204: Type.Null(), ...ErrorResponses } },
    },
    async (request, reply) => {
      await execute(ctx, request, decommissionDevice, { name: request.params.name });
      // Other processes hear the database's notification (migration 0042); this process's
      // device channel must not answer the device's next call from its cache before it arrives.
      ctx.deviceCredentials?.clear();
      return reply.code(204).send(null);
    },
  );

  app.put(
    '/devices/:name/tags/:tag',
    {
      config: { permission: 'devices.write', summary: 'Tag a device (idempotent; audited when it changes)' },
      schema: { params: TagParams, response: { 200: TaggedDevice, ...ErrorResponses } },
    },
    async (request) => {
      const { tags } = await execute(ctx, request, tagDevice, { name: request.params.name, tag: request.params.tag });
      return { name: request.params.name, tags };
    },
  );

  app.delete(
    '/devices/:name/tags/:tag',
    {
      config: { permission: 'devices.write', summary: 'Remove a tag from a device (idempotent; audited when it changes)' },
      schema: { params: TagParams, response: { 200: TaggedDevice, ...ErrorResponses } },
    },
    async (request) => {
      const { tags } = await execute(ctx, request, untagDevice, { name: request.params.name, tag: request.params.tag });
      return { name: request.params.name, tags };
    },
  );

  app.post(
    '/devices/:name/log-requests',
    {
      config: { permission: 'devices.write', summary: 'Request a log bundle (fulfilled on the next heartbeat)' },
      schema: { params: NameParams, response: { 202: LogRequest, ...ErrorResponses } },
    },
    async (request, reply) => {
      const row = await execute(ctx, request, requestLogBundle, { device: request.params.name });
      // spec §4: fulfilled on the device's next heartbeat; the API answers 202.
      return reply
        .code(202)
        .send({ id: row.id, device: request.params.name, status: row.status, created_at: iso(row.created_at), fulfilled_at: iso(row.fulfilled_at) });
    },
  );

  app.get(
    '/devices/:name/log-requests/:id',
    {
      config: { permission: 'devices.read', summary: 'Log request status' },
      schema: { params: LogParams, response: { 200: LogRequest, ...ErrorResponses } },
    },
    async (request) => {
      const p = principalOf(request);
      const device = await deviceOr404(db, p.tenantId, request.params.name);
      const row = await getLogRequest(db, p.tenantId, device.id, request.params.id);
      if (!row) throw notFound(`log request ${request.params.id}`);
      return { id: row.id, device: device.name, status: row.status, created_at: iso(row.created_at), fulfilled_at: iso(row.fulfilled_at) };
    },
  );

  app.get(
    '/devices/:name/log-requests/:id/download',
    {
      config: { permission: 'devices.read', summary: 'Download an uploaded log bundle' },
      schema: { params: LogParams },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const device = await deviceOr404(db, p.tenantId, request.params.name);
      const meta = await getLogRequest(db, p.tenantId, device.id, request.params.id);
      if (!meta) throw notFound(`log request ${request.params.id}`);
      const row = await getLogContent(db, p.tenantId, meta.id);
      if (!row || row.status !== 'uploaded' || row.content === null)
        throw new ServerError('LOG_NOT_READY', `log request ${meta.id}: not uploaded yet (status ${meta.status})`);
      return reply
        .type(row.content_type ?? 'application/octet-stream')
        .header('content-disposition', `attachment; filename="${device.name}-${meta.id}.logs"`)
        .send(Buffer.from(row.content));
    },
  );
};
