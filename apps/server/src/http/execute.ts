import type { FastifyRequest } from 'fastify';
import { principalOf } from '../auth/principal.js';
import type { AuditCredential } from '../resources/audit/queries.js';
import { runUnitOfWork, type Actor, type Command } from '../resources/unit-of-work.js';
import type { AppContext } from './context.js';

/** The caller of a route as the actor of a change (its email or `api-key:<name>`). */
export function actorOf(request: FastifyRequest): Actor {
  const p = principalOf(request);
  return { name: p.actor, credential: p.kind, requestId: request.id };
}

/**
 * Runs one command for a route: a unit of work in the caller's tenant, as the caller, at the
 * context's clock. The only way a route changes state.
 */
export function execute<I, O>(ctx: AppContext, request: FastifyRequest, command: Command<I, O>, input: I): Promise<O> {
  const p = principalOf(request);
  return executeAs(ctx, request, { tenant: p.tenantId, actor: p.actor, credential: p.kind }, command, input);
}

/**
 * `execute()` for the one route whose caller has no principal yet (login): the route names the
 * tenant and the actor it has just authenticated.
 */
export function executeAs<I, O>(
  ctx: AppContext,
  request: FastifyRequest,
  who: { tenant: string; actor: string; credential: AuditCredential },
  command: Command<I, O>,
  input: I,
): Promise<O> {
  const actor: Actor = { name: who.actor, credential: who.credential, requestId: request.id };
  return runUnitOfWork(ctx.store.db, { tenant: who.tenant, actor, now: ctx.now(), hooks: ctx.hooks?.unitOfWork }, (uow) => command(uow, input));
}
