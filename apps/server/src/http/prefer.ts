import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type TSchema } from 'typebox';

/**
 * spec §7: an update answers 204. RFC 7240: a client that sends `Prefer: return=representation`
 * gets 200 with the updated resource instead, and `Preference-Applied: return=representation`.
 */
export function prefersRepresentation(request: FastifyRequest): boolean {
  const header = request.headers.prefer;
  const values = Array.isArray(header) ? header : header === undefined ? [] : [header];
  // Preferences are comma-separated; a preference's own parameters follow `;` (RFC 7240 §2).
  return values.some((v) => v.split(',').some((p) => /^\s*return\s*=\s*"?representation"?\s*$/i.test(p.split(';')[0]!)));
}

/** The response schemas of an update: 204 without a body, 200 with the representation when preferred. */
export function updateResponses<S extends TSchema>(representation: S) {
  return { 200: representation, 204: Type.Null() };
}

/** Sends 204, or 200 with `representation()` when the client prefers it. */
export async function sendUpdated<T>(request: FastifyRequest, reply: FastifyReply, representation: () => T | Promise<T>): Promise<FastifyReply> {
  if (!prefersRepresentation(request)) return reply.code(204).send(null);
  void reply.header('preference-applied', 'return=representation');
  return reply.code(200).send(await representation());
}
