/**
 * buildApp(ctx) -> a fastify instance with every /api/v1 route module registered (no
 * listen: main.ts listens, tests use `app.inject` or listen on port 0).
 *
 * How to add a route module:
 *   1. write `src/routes/v1/<area>.ts` exporting `export const <area>Routes: V1Routes = async (app, { ctx }) => {...}`
 *      (see http/context.ts); every route has `config: { permission: '<name from auth/permissions.ts>' }`
 *      and TypeBox `schema` (body/querystring/params/response) declared once;
 *   2. add ONE line to ROUTE_MODULES below.
 * Cross-cutting behaviour lives here and in http/fastify.ts (validation, the input text
 * rule, framework errors), once:
 *   - onRoute refuses a route without `config.permission` (startup fails) and collects it for OpenAPI;
 *   - onRequest resolves the credential into `request.principal` and enforces the permission
 *     (401 without credential, 403 `missing permission: <name>`), before any body is parsed;
 *   - one error handler maps every error code through errors/table.ts to `{"error": "..."}`.
 * Use `principalOf(request)` for the tenant and `audit(db, request, {...})` for state changes.
 */
import cookie from '@fastify/cookie';
import type { FastifyInstance } from 'fastify';
import { ApiKeyCache } from './auth/api-key-cache.js';
import { authorize, checkCsrf, CSRF_HEADER, resolvePrincipal } from './auth/authenticate.js';
import { isPermission } from './auth/permissions.js';
import { consoleRoutes } from './http/console.js';
import type { AppContext, V1Routes } from './http/context.js';
import { newFastify } from './http/fastify.js';
import { collectRoute, type CollectedRoute } from './http/openapi.js';
import { adminRoutes } from './routes/v1/admin.js';
import { apiKeysRoutes } from './routes/v1/api-keys.js';
import { auditRoutes } from './routes/v1/audit.js';
import { authRoutes } from './routes/v1/auth.js';
import { artifactsRoutes } from './routes/v1/artifacts.js';
import { authorizerKeysRoutes } from './routes/v1/authorizer-keys.js';
import { casesRoutes } from './routes/v1/cases.js';
import { caseSubmissionsRoutes } from './routes/v1/case-submissions.js';
import { casePacketsRoutes } from './routes/v1/case-packets.js';
import { caseAttachmentsRoutes } from './routes/v1/case-attachments.js';
import { caseExportsRoutes } from './routes/v1/case-exports.js';
import { deviceCaRoutes } from './routes/v1/device-ca.js';
import { groupsRoutes } from './routes/v1/groups.js';
import { deviceBulkJobsRoutes } from './routes/v1/device-bulk-jobs.js';
import { releaseReceiptsRoutes } from './routes/v1/release-receipts.js';
import { releaseTransactionsRoutes } from './routes/v1/release-transactions.js';
import { registriesRoutes } from './routes/v1/registries.js';
import { releasesRoutes } from './routes/v1/releases.js';
import { reportsRoutes } from './routes/v1/reports.js';
import { rolloutsRoutes } from './routes/v1/rollouts.js';
import { sbomsRoutes } from './routes/v1/sboms.js';
import { findingsRoutes } from './routes/v1/findings.js';
import { vexRoutes } from './routes/v1/vex.js';
import { vulnFeedsRoutes } from './routes/v1/vuln-feeds.js';
import { vulnerabilitiesRoutes } from './routes/v1/vulnerabilities.js';
import { devicesRoutes } from './routes/v1/devices.js';
import { enrollTokensRoutes } from './routes/v1/enroll-tokens.js';
import { openapiRoutes } from './routes/v1/openapi.js';
import { profileRoutes } from './routes/v1/profile.js';
import { usersRoutes } from './routes/v1/users.js';
import { tufKeyRotationsRoutes } from './routes/v1/tuf-key-rotations.js';
import { signingRepoRoutes } from './signing-repo/index.js';
import { SERVER_LIMITS } from './limits.js';

/** Every /api/v1 route module, one line each. */
const ROUTE_MODULES: readonly V1Routes[] = [
  authRoutes,
  profileRoutes,
  usersRoutes,
  apiKeysRoutes,
  devicesRoutes,
  deviceCaRoutes,
  enrollTokensRoutes,
  auditRoutes,
  adminRoutes,
  artifactsRoutes,
  sbomsRoutes,
  registriesRoutes,
  groupsRoutes,
  deviceBulkJobsRoutes,
  authorizerKeysRoutes,
  releasesRoutes,
  rolloutsRoutes,
  releaseTransactionsRoutes,
  releaseReceiptsRoutes,
  casesRoutes,
  caseSubmissionsRoutes,
  casePacketsRoutes,
  caseAttachmentsRoutes,
  caseExportsRoutes,
  vulnFeedsRoutes,
  vulnerabilitiesRoutes,
  findingsRoutes,
  vexRoutes,
  reportsRoutes,
  tufKeyRotationsRoutes,
  openapiRoutes,
];

export const API_PREFIX = '/api/v1';

declare module 'fastify' {
  interface FastifyInstance {
    /** Every registered route with its permission and schemas (drives openapi.json and the permission test). */
    collectedRoutes: CollectedRoute[];
  }
}

export class RouteWithoutPermissionError extends Error {
  override readonly name = 'RouteWithoutPermissionError';
}

/** `extraRoutes`: modules registered after ROUTE_MODULES (tests, and the bench's baseline). */
export async function buildApp(context: AppContext, options: { extraRoutes?: readonly V1Routes[] } = {}): Promise<FastifyInstance> {
  const opened = context.apiKeyCache === undefined ? await ApiKeyCache.open(context.store) : undefined;
  const ctx: AppContext = opened === undefined ? context : { ...context, apiKeyCache: opened.cache };
  const app = newFastify({ logger: ctx.logger ?? false, bodyLimit: ctx.bodyLimit ?? SERVER_LIMITS.requestBodyBytes });

  if (opened !== undefined) app.addHook('onClose', () => opened.close());

  const routes: CollectedRoute[] = [];
  app.decorate('collectedRoutes', routes);
  app.decorateRequest('principal', null);

  // spec §5 rule 4: every route requires a permission; a route without one refuses to start.
  app.addHook('onRoute', (opts) => {
    const permission = opts.config?.permission;
    if (permission !== 'public' && !isPermission(permission)) {
      throw new RouteWithoutPermissionError(`route ${String(opts.method)} ${opts.url} declares no valid config.permission (got ${JSON.stringify(permission)})`);
    }
    collectRoute(routes, opts);
  });

  await app.register(cookie);

  app.addHook('onRequest', async (request) => {
    const config = request.routeOptions.config;
    const permission = config?.permission;
    if (permission === undefined || permission === 'public') return; // 404 handler or public route
    const principal = await resolvePrincipal(ctx.store.db, request, ctx.now(), ctx.apiKeyCache);
    request.principal = principal;
    authorize(principal, permission, config.sessionOnly === true);
    checkCsrf(principal, request.method, request.headers[CSRF_HEADER]);
  });

  for (const routes of [...ROUTE_MODULES, ...(options.extraRoutes ?? [])]) {
    await app.register(routes, { prefix: API_PREFIX, ctx });
  }
  // Operator read access to the tenant's TUF repository (/api/v1/tuf/{tenant}/...): own tenant only.
  if (ctx.signingRepo !== undefined) {
    await app.register(signingRepoRoutes, {
      prefix: API_PREFIX,
      repo: ctx.signingRepo,
      permission: 'artifacts.read',
      authorizeTenant: (request, tenantId) => request.principal?.tenantId === tenantId,
    });
  }
  if (ctx.consoleDir !== undefined) await app.register(consoleRoutes, { dir: ctx.consoleDir });
  return app;
}
