import { Stream, type Readable } from 'node:stream';
import { sha256Digest } from '@svc/release-core';
import { Type } from 'typebox';
import { notFound, ServerError } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, iso, PageOf, PageQuery, Strict } from '../../http/schemas.js';
import { surveyArchive } from '../../resources/vuln-feeds/archive.js';
import { importKevCatalog, type RunCommand } from '../../resources/vuln-feeds/commands.js';
import { importOsvArchive } from '../../resources/vuln-feeds/import.js';
import { readKevCatalog } from '../../resources/vuln-feeds/kev.js';
import { feedFreshness, getImport, listImports, type ImportRow } from '../../resources/vuln-feeds/queries.js';
import { storeUpload } from '../../resources/vuln-feeds/upload.js';
import { FeedFreshness, Import, type ImportView } from '../../resources/vuln-feeds/schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

const ARCHIVE_TYPES = ['application/zip', 'application/x-tar', 'application/gzip', 'application/x-gzip', 'application/octet-stream'];

const importView = (r: ImportRow): ImportView => ({
  id: r.id,
  kind: r.kind,
  source: r.source,
  digest: r.digest,
  state: r.state,
  entries_total: r.entries_total,
  entries_done: r.entries_done,
  added: r.added,
  updated: r.updated,
  unchanged: r.unchanged,
  skipped: r.skipped,
  skipped_detail: r.skipped_detail,
  ranges_skipped: r.ranges_skipped,
  ranges_skipped_detail: r.ranges_skipped_detail,
  catalog_version: r.catalog_version,
  actor: r.actor,
  started_at: iso(r.started_at),
  completed_at: iso(r.completed_at),
});

const SourceQuery = Strict({
  source: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9 ._:/-]*$', description: 'a label for the feed, e.g. "osv:PyPI"' }),
  ),
});

/** How deeply arrays and objects nest in a parsed JSON value (iterative: no recursion on input). */
function nestingDepth(value: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    max = Math.max(max, depth + 1);
    if (max > SERVER_LIMITS.kevDepth) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return max;
}

/**
 * Vulnerability feeds (global: one copy serves every tenant). Importing changes what every
 * tenant sees, so it is an administrator's act (`admin.manage`); reading feed state needs
 * `evidence.read`. Imports are audited in the importing administrator's tenant.
 */
export const vulnFeedsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  // the archive is streamed to a temp file (capped there), never buffered whole
  app.addContentTypeParser(ARCHIVE_TYPES, (_req, payload, done) => done(null, payload));

  app.post(
    '/vuln-feeds/osv',
    {
      config: {
        permission: 'admin.manage',
        summary: 'Import an OSV feed (zip as OSV publishes per ecosystem, or tar / tar.gz of OSV JSON records); 201 new, 200 already imported or resumed',
      },
      schema: { querystring: SourceQuery, consumes: ARCHIVE_TYPES, response: { 200: Import, 201: Import, ...ErrorResponses } },
    },
    async (request, reply) => {
      if (!(request.body instanceof Stream)) {
        throw new ServerError('UNSUPPORTED_MEDIA_TYPE', `body: send the OSV archive as one of ${ARCHIVE_TYPES.join(', ')}`);
      }
      const upload = await storeUpload(request.body as Readable);
      try {
        // archive-level refusals (unsafe names, zip bombs) happen here, before anything is written
        const survey = await surveyArchive(upload.path);
        const run: RunCommand = (command, input) => execute(ctx, request, command, input);
        const r = await importOsvArchive(run, upload.path, request.query.source ?? 'osv', survey);
        return reply.code(r.created ? 201 : 200).send(importView(r.row));
      } finally {
        await upload.remove();
      }
    },
  );

  app.post(
    '/vuln-feeds/kev',
    {
      config: { permission: 'admin.manage', summary: 'Import the CISA Known Exploited Vulnerabilities catalog (its JSON); 201 new, 200 the same bytes again' },
      bodyLimit: SERVER_LIMITS.feeds.maxKevBytes,
      schema: { querystring: SourceQuery, body: Type.Unknown(), response: { 200: Import, 201: Import, ...ErrorResponses } },
    },
    async (request, reply) => {
      // a catalog is a few levels deep; a deeper document is refused before it is walked recursively
      if (nestingDepth(request.body) > SERVER_LIMITS.kevDepth)
        throw new ServerError('FEED_INVALID', `body: nested deeper than ${SERVER_LIMITS.kevDepth} levels; not a KEV catalog`);
      // the parsed body, serialized again: the same catalog always has the same digest
      const bytes = Buffer.from(JSON.stringify(request.body));
      const catalog = readKevCatalog(bytes);
      const digest = sha256Digest(bytes);
      const r = await execute(ctx, request, importKevCatalog, { source: request.query.source ?? 'cisa-kev', digest, catalog });
      return reply.code(r.created ? 201 : 200).send(importView(r.row));
    },
  );

  app.get(
    '/vuln-feeds',
    {
      config: { permission: 'evidence.read', summary: 'Feed freshness: OSV sources and their last import, newest record time, KEV catalog version' },
      schema: {
        response: {
          200: FeedFreshness,
          ...ErrorResponses,
        },
      },
    },
    async () => {
      const f = await feedFreshness(db);
      return {
        osv: f.osv.map((o) => ({ ...o, last_import_at: iso(o.last_import_at) })),
        advisories: f.advisories,
        newest_modified: iso(f.newest_modified),
        kev: { ...f.kev, last_import_at: iso(f.kev.last_import_at) },
      };
    },
  );

  app.get(
    '/vuln-feeds/imports',
    {
      config: { permission: 'evidence.read', summary: 'Feed imports, newest first (counts by state over all imports)' },
      schema: {
        querystring: Strict({ ...PageQuery }),
        response: { 200: PageOf('imports', Import, Type.Object({ running: Type.Integer(), completed: Type.Integer() })), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'imports', async (snap, { limit, offset }) => {
        const r = await listImports(snap, limit, offset);
        return { items: r.rows.map(importView), total: r.total, counts: r.counts };
      }),
  );

  app.get(
    '/vuln-feeds/imports/:id',
    {
      config: { permission: 'evidence.read', summary: 'One feed import (progress, counts, skipped records)' },
      schema: { params: Strict({ id: Type.String({ maxLength: 64 }) }), response: { 200: Import, ...ErrorResponses } },
    },
    async (request) => {
      const r = await getImport(db, request.params.id);
      if (!r) throw notFound(`feed import ${request.params.id}`);
      return importView(r);
    },
  );
};
