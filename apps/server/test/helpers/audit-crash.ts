/**
 * Audit atomicity under a real crash (spec §6 rule 1: every state change has its audit row). Each
 * row names a request and the audit action it writes; a child process running the built app
 * on the same database is SIGKILLed after that audit row is written and before COMMIT. Then:
 * no audit row for the action and the observed resource unchanged (the change did not commit
 * on its own); the same request in-process succeeds, writes the row, and changes what is
 * observed (so the observation can tell).
 *
 *   auditCrashSuite('devices', [{ name: 'decommission', action: 'device.decommission',
 *     prepare: async (f) => { await f.device('gw-1'); return { request: { method: 'DELETE', url: '/api/v1/devices/gw-1' }, observe: { method: 'GET', url: '/api/v1/devices/gw-1' } }; } }]);
 *
 * A row may name a background job instead of a request (`{ job, restart }`): the child runs
 * the job once with the same hook, and the parent's in-process run is `restart()`.
 *
 * Runs on PostgreSQL (a second process on the same database); PGlite runs in one process
 * only, and its transactions are PostgreSQL's own. Without SVC_TEST_DATABASE_URL the suite
 * skips loudly, and fails under CI=true.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReleaseFixture, type ReleaseFixture } from '../fixtures/release-flow.js';
import { runChildUntilKilled } from './kill-child.js';

export interface CrashRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  payload?: unknown;
  headers?: Record<string, string>;
}

/** A background job the child runs once instead of a request (the change is the job's). */
export interface CrashJob {
  job: 'vuln-analysis';
  /** The job run again in-process after the kill: the restart (after a dead process's lease lapsed, say). */
  restart(): Promise<void>;
}

export interface AuditCrashRow {
  /** Test title: the change made. */
  name: string;
  /** The audit action the change writes; the kill follows its row. */
  action: string;
  /**
   * Brings the fixture to the state before the change (through the API); returns the change's
   * request and a read that shows the change: a GET, or a function (a query) where no route shows it.
   */
  prepare(f: ReleaseFixture): Promise<{ request: CrashRequest | CrashJob; observe: CrashRequest | (() => Promise<unknown>) }>;
}

const CHILD = join(import.meta.dirname, 'audit-crash-child.mjs');

/** A request as the child's JSON config carries it: binary payloads (multipart, archives) as base64. */
function toWire(r: CrashRequest): Record<string, unknown> {
  if (!Buffer.isBuffer(r.payload) && !(r.payload instanceof Uint8Array)) return { ...r };
  const { payload, ...rest } = r;
  return { ...rest, payloadBase64: Buffer.from(payload).toString('base64') };
}

export function auditCrashSuite(resource: string, rows: readonly AuditCrashRow[]): void {
  const url = process.env.SVC_TEST_DATABASE_URL;
  if (url === undefined) {
    if (process.env.CI === 'true') throw new Error(`audit crash suite (${resource}): SVC_TEST_DATABASE_URL must be set under CI`);
    console.warn(`SKIPPED: audit crash suite (${resource}) needs SVC_TEST_DATABASE_URL (a second process on one database)`);
    describe.skip(`audit atomicity of ${resource} (needs PostgreSQL)`, () => it.skip('skipped', () => undefined));
    return;
  }
  describe(`audit atomicity of ${resource}, killed between the audit row and COMMIT (postgres)`, () => {
    let f: ReleaseFixture;
    let childDir: string;
    beforeAll(async () => {
      f = await createReleaseFixture('postgres');
      childDir = await mkdtemp(join(tmpdir(), 'svc-audit-crash-'));
    });
    afterAll(async () => {
      await f.dispose();
      await rm(childDir, { recursive: true, force: true });
    });

    const auditCount = async (action: string) =>
      Number((await sql<{ n: string }>`SELECT count(*) AS n FROM audit_events WHERE action = ${action}`.execute(f.t.testStore.store.db)).rows[0]!.n);

    for (const row of rows) {
      it(`${row.name}: nothing commits without its ${row.action} row`, async () => {
        const { request, observe } = await row.prepare(f);
        const asAdmin = (r: CrashRequest) => ({ ...r, headers: { ...f.admin, ...r.headers } });
        const read = async () => (typeof observe === 'function' ? JSON.stringify(await observe()) : (await f.t.app.inject(asAdmin(observe) as never)).body);
        const before = await read();
        const rowsBefore = await auditCount(row.action);

        const job = 'job' in request ? request : undefined;
        const run = await runChildUntilKilled(
          childDir,
          {
            open: f.t.testStore.openOptions,
            dataDir: f.dataDir,
            action: row.action,
            ...(job ? { job: job.job } : { request: toWire(asAdmin(request as CrashRequest)) }),
          },
          CHILD,
        );
        expect(run.stdout, run.stderr).toBe(`AT ${row.action}\n`);
        expect(run.signal).toBe('SIGKILL');
        expect(await auditCount(row.action)).toBe(rowsBefore);
        expect(await read()).toBe(before);

        if (job) await job.restart();
        else {
          const res = await f.t.app.inject(asAdmin(request as CrashRequest) as never);
          expect(res.statusCode, res.body).toBeLessThan(300);
        }
        expect(await auditCount(row.action)).toBe(rowsBefore + 1);
        expect(await read()).not.toBe(before);
      }, 60_000);
    }
  });
}
