import type { V1Routes } from '../../http/context.js';
import { buildOpenApi } from '../../http/openapi.js';

/**
 * OpenAPI 3.1 of every registered route, built on first request (after all modules are
 * registered) from the schemas collected in app.ts's onRoute hook. Readable by any
 * credential: it documents routes, not data.
 */
export const openapiRoutes: V1Routes = async (app) => {
  let doc: Record<string, unknown> | undefined;
  app.get('/openapi.json', { config: { permission: 'profile.read', summary: 'OpenAPI 3.1 document' }, schema: {} }, async (_request, reply) => {
    doc ??= buildOpenApi(app.collectedRoutes, { title: 'svc fleet update service operator API', version: '1' });
    // Send pre-serialized: the response schema must not strip the document's contents.
    return reply.type('application/json').send(JSON.stringify(doc));
  });
};
