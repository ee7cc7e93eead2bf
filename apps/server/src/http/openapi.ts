import type { RouteOptions } from 'fastify';

/**
 * A small OpenAPI 3.1 generator: routes are collected from fastify's onRoute hook (so
 * every module is covered) and their TypeBox schemas, which
 * are JSON Schema 2020-12 already, are placed into the document as they are.
 */
export interface CollectedRoute {
  method: string;
  url: string;
  permission: string | undefined;
  sessionOnly: boolean;
  summary: string | undefined;
  schema: Record<string, unknown> | undefined;
}

export function collectRoute(routes: CollectedRoute[], opts: RouteOptions): void {
  // the console's static files (http/console.ts) are not API operations
  if (!opts.url.startsWith('/api/')) return;
  const methods = Array.isArray(opts.method) ? opts.method : [opts.method];
  for (const method of methods) {
    if (method === 'HEAD') continue;
    routes.push({
      method,
      url: opts.url,
      permission: opts.config?.permission,
      sessionOnly: opts.config?.sessionOnly === true,
      summary: opts.config?.summary,
      schema: opts.schema as Record<string, unknown> | undefined,
    });
  }
}

type Json = Record<string, unknown>;

function clean(schema: unknown): unknown {
  // TypeBox 1.x schemas are plain JSON Schema objects; a JSON round trip drops symbols.
  return schema === undefined ? undefined : JSON.parse(JSON.stringify(schema));
}

function parameters(where: 'query' | 'path', schema: unknown): Json[] {
  const s = clean(schema) as { properties?: Record<string, Json>; required?: string[] } | undefined;
  if (!s?.properties) return [];
  return Object.entries(s.properties).map(([name, prop]) => ({
    name,
    in: where,
    required: where === 'path' || (s.required ?? []).includes(name),
    schema: prop,
    ...(typeof prop.description === 'string' ? { description: prop.description } : {}),
  }));
}

export function buildOpenApi(routes: readonly CollectedRoute[], info: { title: string; version: string }): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of [...routes].sort((a, b) => a.url.localeCompare(b.url) || a.method.localeCompare(b.method))) {
    const path = r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const schema = r.schema ?? {};
    const op: Json = {
      'x-permission': r.permission,
      ...(r.sessionOnly ? { 'x-session-only': true } : {}),
      ...(r.summary !== undefined ? { summary: r.summary } : {}),
      ...(r.permission === 'public' ? { security: [] } : {}),
      parameters: [...parameters('path', schema.params), ...parameters('query', schema.querystring)],
      responses: {},
    };
    if (schema.body !== undefined) {
      op.requestBody = { required: true, content: { 'application/json': { schema: clean(schema.body) } } };
    } else if (Array.isArray(schema.consumes)) {
      // a body the route reads itself (multipart, a raw document): its media types, any content
      const content = Object.fromEntries((schema.consumes as string[]).map((type) => [type, { schema: {} }]));
      op.requestBody = { required: true, content };
    }
    const responses = (schema.response ?? {}) as Record<string, unknown>;
    for (const [status, body] of Object.entries(responses)) {
      const s = clean(body) as Json;
      (op.responses as Json)[status] = {
        description: String(s?.description ?? status),
        ...(status === '204' ? {} : { content: { 'application/json': { schema: s } } }),
      };
    }
    if (Object.keys(op.responses as Json).length === 0) (op.responses as Json).default = { description: 'response' };
    (paths[path] ??= {})[r.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info,
    components: {
      securitySchemes: {
        session: { type: 'apiKey', in: 'cookie', name: 'svc_session' },
        apiKey: { type: 'http', scheme: 'bearer' },
      },
    },
    security: [{ session: [] }, { apiKey: [] }],
    paths,
  };
}
