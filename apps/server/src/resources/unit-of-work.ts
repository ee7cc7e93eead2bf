/**
 * The unit of work every state change runs in: one database transaction, the clock read once,
 * the tenant and the actor, and `audit()` writing the change's audit row inside that same
 * transaction. A change and its audit row commit together or not at all (spec §6 rule 1).
 *
 * A command that makes many changes at once (a batch of device receipts) writes their rows with
 * one statement, `auditMany()`, each row naming its own actor when it is not the unit's.
 * Many units of work committed together (the device channel's enrollments) run through
 * `runUnitsOfWorkTogether()` and one `BatchCommand`, each unit keeping its own scope and
 * audit row.
 *
 *   export const decommissionDevice: Command<{ name: string }, void> = async (uow, { name }) => {
 *     const row = await queries.setStatus(uow.trx, uow.tenant, name, 'decommissioned', uow.now);
 *     await uow.audit({ action: 'device.decommission', target: `device:${name}` });
 *   };
 *
 * Routes run a command with `execute()` (http/execute.ts); the device channel and jobs with
 * `runUnitOfWork()` and a device or system actor. Nothing else opens a transaction for a
 * change, and nothing else writes audit rows.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../store/database.js';
import { inTransaction } from '../store/tx.js';
import { insertAuditRows, type AuditCredential } from './audit/queries.js';

/** Who makes a change: written on its audit row. */
export interface Actor {
  /** Email, `api-key:<name>`, `device:<name>` or `system:<job>`. */
  name: string;
  credential: AuditCredential;
  /** The HTTP request id, or null outside a request. */
  requestId: string | null;
}

/** An audit row of a batch: each change may have its own actor (a receipt is its device's change). */
export interface BatchAuditEntry extends AuditEntry {
  /** Defaults to the unit of work's actor. */
  actor?: Actor;
}

export interface AuditEntry {
  /** Dotted verb, e.g. `device.decommission`. */
  action: string;
  /** What was changed, e.g. `device:gw-0001`, `user:<uuid>`. */
  target: string;
  detail?: Record<string, unknown>;
}

export interface UnitOfWork {
  /** The transaction: pass it to the resource's query functions. */
  readonly trx: Transaction<Database>;
  /** The clock, read once when the unit of work began. */
  readonly now: Date;
  readonly tenant: string;
  readonly actor: Actor;
  /** Writes one audit row in this transaction (at `now`, by `actor`). */
  audit(entry: AuditEntry): Promise<void>;
  /** Writes the audit rows of a batch of changes with one statement, in this transaction (at `now`). */
  auditMany(entries: readonly BatchAuditEntry[]): Promise<void>;
}

/** A state change: everything it writes goes through `uow.trx`, and it audits itself. */
export type Command<I, O> = (uow: UnitOfWork, input: I) => Promise<O>;

/** One unit of work of a `UnitsOfWork` batch and its command's input. */
export interface BatchUnit<I> {
  readonly uow: UnitOfWork;
  readonly input: I;
}

/**
 * Several units of work in one transaction, handed to one command at once so it can write the
 * rows of all of them with one statement per table. Each unit keeps its own scope (tenant,
 * actor, clock) and its own audit row.
 */
export interface UnitsOfWork<I> {
  readonly trx: Transaction<Database>;
  readonly units: readonly BatchUnit<I>[];
  /** Writes the audit rows of many units with one statement, each at its unit's `now`, by its unit's actor, for its unit's tenant. */
  audit(entries: readonly { uow: UnitOfWork; entry: AuditEntry }[]): Promise<void>;
}

/** A state change made for many units of work at once; answers one result per unit, in order. */
export type BatchCommand<I, O> = (batch: UnitsOfWork<I>) => Promise<O[]>;

/**
 * Fault-injection seam (tests only set it, programmatically: no setting of the shipped process
 * reaches it): called after a command's audit row is written and before COMMIT, so a test can
 * kill the process exactly there and prove the change did not commit without its row.
 */
export interface UnitOfWorkHooks {
  afterAudit?(entry: AuditEntry): void | Promise<void>;
  /** Called after the command returned, right before COMMIT, with the actions it audited. */
  beforeCommit?(actions: readonly string[]): void | Promise<void>;
}

export interface UnitOfWorkScope {
  tenant: string;
  actor: Actor;
  now: Date;
  hooks?: UnitOfWorkHooks | undefined;
}

/** The audit row of `entry`, made in `scope` (its tenant, at its clock) by `actor`. */
function auditRow(scope: Pick<UnitOfWorkScope, 'tenant' | 'now'>, actor: Actor, entry: AuditEntry) {
  return {
    tenantId: scope.tenant,
    actor: actor.name,
    credential: actor.credential,
    action: entry.action,
    target: entry.target,
    requestId: actor.requestId,
    detail: entry.detail ?? {},
    at: scope.now,
  };
}

/** After its row is written: the entry joins the unit's actions and its `afterAudit` hook runs. */
async function audited(scope: UnitOfWorkScope, actions: string[], entry: AuditEntry): Promise<void> {
  actions.push(entry.action);
  await scope.hooks?.afterAudit?.(entry);
}

/** The unit of work of `scope` inside `trx`; `actions` collects what it audited. */
function unitOf(trx: Transaction<Database>, scope: UnitOfWorkScope, actions: string[]): UnitOfWork {
  const auditMany = async (entries: readonly BatchAuditEntry[]) => {
    await insertAuditRows(
      trx,
      entries.map((entry) => auditRow(scope, entry.actor ?? scope.actor, entry)),
    );
    for (const entry of entries) await audited(scope, actions, entry);
  };
  return { trx, now: scope.now, tenant: scope.tenant, actor: scope.actor, audit: (entry) => auditMany([entry]), auditMany };
}

/** Runs `fn` in one transaction as `scope.actor`; the change and its audit rows commit together. */
export function runUnitOfWork<T>(db: Kysely<Database>, scope: UnitOfWorkScope, fn: (uow: UnitOfWork) => Promise<T>): Promise<T> {
  return inTransaction(db, async (trx) => {
    const actions: string[] = [];
    const result = await fn(unitOf(trx, scope, actions));
    await scope.hooks?.beforeCommit?.(actions);
    return result;
  });
}

/**
 * Group commit: several units of work in ONE transaction, each with its own scope (tenant,
 * actor, clock), audit rows and hooks (`afterAudit` per audited entry, `beforeCommit` with the
 * unit's own actions), handled by one command at once (`BatchCommand`), so a batch of n
 * changes costs a few multi-row statements instead of n times each statement. Worth it where
 * many small changes would otherwise queue on the same rows (per-tenant counters) across their
 * round trips. All commit together or none does: the first failure rolls back every one of
 * them and is thrown, and the caller runs them again one by one (`runUnitOfWork`) to tell
 * which failed.
 */
export function runUnitsOfWorkTogether<I, O>(
  db: Kysely<Database>,
  units: readonly { scope: UnitOfWorkScope; input: I }[],
  command: BatchCommand<I, O>,
): Promise<O[]> {
  return inTransaction(db, async (trx) => {
    const members = units.map((u) => {
      const actions: string[] = [];
      return { scope: u.scope, actions, uow: unitOf(trx, u.scope, actions), input: u.input };
    });
    const byUnit = new Map(members.map((m) => [m.uow, m]));
    const audit = async (entries: readonly { uow: UnitOfWork; entry: AuditEntry }[]) => {
      await insertAuditRows(
        trx,
        entries.map(({ uow, entry }) => auditRow(uow, uow.actor, entry)),
      );
      for (const { uow, entry } of entries) {
        const m = byUnit.get(uow);
        if (m !== undefined) await audited(m.scope, m.actions, entry);
      }
    };
    const results = await command({ trx, units: members.map(({ uow, input }) => ({ uow, input })), audit });
    for (const m of members) await m.scope.hooks?.beforeCommit?.(m.actions);
    return results;
  });
}

/** A batch command run for one unit of work inside that unit (its batch of one). */
export async function runAlone<I, O>(uow: UnitOfWork, input: I, command: BatchCommand<I, O>): Promise<O> {
  const [out] = await command({
    trx: uow.trx,
    units: [{ uow, input }],
    audit: (entries) => uow.auditMany(entries.map((e) => e.entry)),
  });
  return out as O;
}

/** The actor of a background job (`system:<job>`). */
export function systemActor(job: string): Actor {
  return { name: `system:${job}`, credential: 'system', requestId: null };
}

/** The actor of a device-channel call (`device:<name>`). */
export function deviceActor(deviceName: string): Actor {
  return { name: `device:${deviceName}`, credential: 'device', requestId: null };
}
