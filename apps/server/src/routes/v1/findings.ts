import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, iso, PageOf, PageQuery, Strict } from '../../http/schemas.js';
import { getArtifact } from '../../resources/artifacts/queries.js';
import { getFinding, listFindings, VEX_STATUSES, type FindingFilter } from '../../resources/findings/queries.js';
import { findingView } from '../../resources/findings/views.js';
import { getDeviceByName } from '../../resources/devices/queries/identity.js';
import { getRun, listRuns, type RunRow } from '../../resources/vuln-analysis/queries.js';
import { SEVERITIES } from '../../resources/vulnerabilities/severity.js';
import { Finding, FindingPage } from '../../resources/findings/schemas.js';
import { Run, type RunView } from '../../resources/vuln-analysis/schemas.js';

const FilterQuery = {
  ...PageQuery,
  severity: Type.Optional(
    Type.Union(
      SEVERITIES.map((s) => Type.Literal(s)),
      { description: 'at or above this severity' },
    ),
  ),
  known_exploited: Type.Optional(Type.Boolean()),
  vex_status: Type.Optional(
    Type.Union(
      [...VEX_STATUSES, 'none'].map((s) => Type.Literal(s)),
      { description: 'none: no VEX statement' },
    ),
  ),
  open: Type.Optional(Type.Boolean({ description: 'true: not closed by VEX; false: not_affected or fixed' })),
  vulnerability: Type.Optional(Type.String({ maxLength: 128, description: 'any id or alias (CVE, GHSA, DSA...)' })),
};

const runView = (r: RunRow): RunView => ({
  id: r.id,
  reason: r.reason,
  state: r.state,
  artifacts_total: r.artifacts_total,
  artifacts_done: r.artifacts_done,
  findings_added: r.findings_added,
  findings_removed: r.findings_removed,
  findings_withdrawn: r.findings_withdrawn,
  signals: r.signals,
  created_at: iso(r.created_at),
  started_at: iso(r.started_at),
  completed_at: iso(r.completed_at),
});

type FilterInput = {
  severity?: (typeof SEVERITIES)[number] | undefined;
  known_exploited?: boolean | undefined;
  vex_status?: string | undefined;
  open?: boolean | undefined;
  vulnerability?: string | undefined;
};
const filterOf = (q: FilterInput): FindingFilter => ({
  severity: q.severity,
  known_exploited: q.known_exploited,
  vex_status: q.vex_status,
  open: q.open,
  vuln: q.vulnerability,
});

/** Findings (evidence.read): the tenant's list with filters, one finding, per artifact and per device; analysis progress. */
export const findingsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.get(
    '/findings',
    {
      config: {
        permission: 'evidence.read',
        summary:
          'Findings, known exploited first (filters: severity >= X, known_exploited, vex_status, open, artifact, product, vulnerability; counts by severity)',
      },
      schema: {
        querystring: Strict({
          ...FilterQuery,
          artifact: Type.Optional(Type.String({ format: 'uuid' })),
          product: Type.Optional(Type.String({ maxLength: 128 })),
        }),
        response: { 200: FindingPage, ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'findings', async (snap, { limit, offset }) => {
        const r = await listFindings(
          snap,
          principalOf(request).tenantId,
          { ...filterOf(request.query), artifact_id: request.query.artifact, product: request.query.product },
          limit,
          offset,
        );
        return { items: r.rows.map(findingView), total: r.total, counts: r.counts };
      }),
  );

  app.get(
    '/findings/:id',
    {
      config: { permission: 'evidence.read', summary: 'One finding' },
      schema: { params: Strict({ id: Type.String({ maxLength: 64 }) }), response: { 200: Finding, ...ErrorResponses } },
    },
    async (request) => {
      const f = await getFinding(db, principalOf(request).tenantId, request.params.id);
      if (!f) throw notFound(`finding ${request.params.id}`);
      return findingView(f);
    },
  );

  app.get(
    '/artifacts/:id/findings',
    {
      config: { permission: 'evidence.read', summary: "An artifact's findings (same filters and counts as /findings)" },
      schema: { params: Strict({ id: Type.String({ maxLength: 64 }) }), querystring: Strict(FilterQuery), response: { 200: FindingPage, ...ErrorResponses } },
    },
    async (request) =>
      listPage(db, request.query, 'findings', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        if (!(await getArtifact(snap, tenantId, request.params.id))) throw notFound(`artifact ${request.params.id}`);
        const r = await listFindings(snap, tenantId, { ...filterOf(request.query), artifact_id: request.params.id }, limit, offset);
        return { items: r.rows.map(findingView), total: r.total, counts: r.counts };
      }),
  );

  app.get(
    '/devices/:name/findings',
    {
      config: { permission: 'evidence.read', summary: 'Findings of what a device runs now (open only unless open=false or vex_status is given)' },
      schema: { params: Strict({ name: Type.String({ maxLength: 64 }) }), querystring: Strict(FilterQuery), response: { 200: FindingPage, ...ErrorResponses } },
    },
    async (request) =>
      listPage(db, request.query, 'findings', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        if (!(await getDeviceByName(snap, tenantId, request.params.name))) throw notFound(`device ${request.params.name}`);
        const q = filterOf(request.query);
        // a device's findings are its open ones unless the caller asks otherwise
        if (q.open === undefined && q.vex_status === undefined) q.open = true;
        const r = await listFindings(snap, tenantId, { ...q, device: request.params.name }, limit, offset);
        return { items: r.rows.map(findingView), total: r.total, counts: r.counts };
      }),
  );

  app.get(
    '/vuln-analysis/runs',
    {
      config: { permission: 'evidence.read', summary: 'Re-analysis runs of this tenant (progress), newest first; counts by state' },
      schema: {
        querystring: Strict({ ...PageQuery }),
        response: { 200: PageOf('runs', Run, Type.Object({ queued: Type.Integer(), running: Type.Integer(), completed: Type.Integer() })), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'runs', async (snap, { limit, offset }) => {
        const r = await listRuns(snap, principalOf(request).tenantId, limit, offset);
        return { items: r.rows.map(runView), total: r.counts.queued + r.counts.running + r.counts.completed, counts: r.counts };
      }),
  );

  app.get(
    '/vuln-analysis/runs/:id',
    {
      config: { permission: 'evidence.read', summary: 'One re-analysis run' },
      schema: { params: Strict({ id: Type.String({ maxLength: 64 }) }), response: { 200: Run, ...ErrorResponses } },
    },
    async (request) => {
      const r = await getRun(db, principalOf(request).tenantId, request.params.id);
      if (!r) throw notFound(`analysis run ${request.params.id}`);
      return runView(r);
    },
  );
};
