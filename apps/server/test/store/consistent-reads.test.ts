import type { Transaction as PgliteTransaction } from '@electric-sql/pglite';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSecret } from '../../src/auth/secrets.js';
import type { Database } from '../../src/store/database.js';
import type { Transaction } from 'kysely';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { availableDrivers, filePglite } from '../helpers/store.js';

/**
 * Reads that race writes on one store, over a real port with many requests in flight (what
 * the console does: several queries refetch at once while a mutation commits).
 *
 * - A list's page, `total` and `counts` describe one snapshot: a list answered while VEX
 *   documents are attached never shows fewer (or more) statements than its total.
 * - On PGlite (one session), a read never runs inside another request's open transaction,
 *   whichever path it takes (the prepared device list and API-key lookup included): it
 *   neither sees that transaction's uncommitted rows nor has its own write undone by that
 *   transaction's rollback. Also when the transaction is opened on the PGlite instance
 *   itself rather than through the store.
 */
const VEX_TYPE = 'application/openvex+json';
const openvex = (i: number) =>
  JSON.stringify({
    '@context': 'https://openvex.dev/ns/v0.2.0',
    '@id': `https://example.com/vex/race-${i}`,
    author: 'Security Team',
    timestamp: '2024-03-01T00:00:00Z',
    version: 1,
    statements: [
      {
        vulnerability: { name: `CVE-2024-${10000 + i}` },
        products: [{ '@id': 'pkg:oci/app@sha256:abc' }],
        status: i % 2 === 0 ? 'affected' : 'under_investigation',
        action_statement: 'upgrade',
      },
    ],
  });

async function insertArtifact(t: TestApp, name: string): Promise<string> {
  const { rows } = await sql<{
    id: string;
  }>`INSERT INTO artifacts (tenant_id, name, version, kind, media_type, filename, digest, length, target, created_at, updated_at)
    VALUES (${t.tenantId}, ${name}, '1.0.0', 'config', 'application/octet-stream', 'race.conf', 'sha256:' || repeat('0', 64), 1, ${`race/${name}`}, now(), now())
    RETURNING id`.execute(t.testStore.store.db);
  return rows[0]!.id;
}

describe.each(availableDrivers())('a list and its total in one snapshot on %s', (driver) => {
  let t: TestApp;
  let base: string;
  let admin: Record<string, string>;
  beforeAll(async () => {
    t = await createTestApp(driver);
    admin = await t.loginAs('admin');
    base = `${await t.app.listen({ host: '127.0.0.1', port: 0 })}/api/v1`;
  }, 60_000);
  afterAll(async () => {
    await t?.dispose();
  });

  it('GET /artifacts/{id}/vex while documents are attached: every page holds exactly its total', async () => {
    const artifact = await insertArtifact(t, 'vex-race');
    const posters = 3;
    const perPoster = 10;
    const wrong: unknown[] = [];
    const totals = new Set<number>();
    let writing = true;
    let next = 0;
    const post = async () => {
      for (let k = 0; k < perPoster; k++) {
        const r = await fetch(`${base}/artifacts/${artifact}/vex`, { method: 'POST', headers: { ...admin, 'content-type': VEX_TYPE }, body: openvex(next++) });
        expect(r.status, await r.text()).toBe(201);
      }
    };
    const read = async () => {
      while (writing) {
        const r = await fetch(`${base}/artifacts/${artifact}/vex?limit=200`, { headers: admin });
        expect(r.status).toBe(200);
        const body = (await r.json()) as { statements: unknown[]; total: number; counts: Record<string, number> };
        totals.add(body.total);
        const counted = Object.values(body.counts).reduce((a, n) => a + n, 0);
        if (body.statements.length !== body.total || counted !== body.total) wrong.push({ page: body.statements.length, total: body.total, counted });
      }
    };
    const readers = Array.from({ length: 6 }, read);
    await Promise.all(Array.from({ length: posters }, post));
    writing = false;
    await Promise.all(readers);
    expect(wrong).toEqual([]);
    // the reads really overlapped the writes (else this test could not fail)
    expect(totals.size).toBeGreaterThan(3);
    const final = (await (await fetch(`${base}/artifacts/${artifact}/vex?limit=200`, { headers: admin })).json()) as { total: number };
    expect(final.total).toBe(posters * perPoster);
  }, 120_000);
});

describe("PGlite: no read or write runs inside another request's open transaction", () => {
  let t: TestApp;
  let base: string;
  let lister: { authorization: string };
  let admin: Record<string, string>;
  beforeAll(async () => {
    t = await createTestApp('pglite');
    admin = await t.loginAs('admin');
    lister = await t.apiKeyHeaders('admin');
    base = `${await t.app.listen({ host: '127.0.0.1', port: 0 })}/api/v1`;
    // used once, so its last-used time is fresh and later requests with it only read
    expect((await fetch(`${base}/devices`, { headers: lister })).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await t?.dispose();
  });

  /**
   * Opens a transaction (via `open`) that inserts a device and an API key and stays open
   * while the device list (first page: the prepared path), a request authenticated by the
   * uncommitted key (the prepared lookup) and a write of another request are sent; then
   * rolls it back. Returns what those requests saw.
   */
  async function raceOpenTransaction(open: (work: (insert: (text: string, params: unknown[]) => Promise<unknown>) => Promise<void>) => Promise<void>) {
    const device = `race-${Math.random().toString(36).slice(2, 10)}`;
    const key = newSecret('svck');
    const schema = t.testStore.openOptions.schema;
    let inserted!: () => void;
    const ready = new Promise<void>((r) => (inserted = r));
    const rolledBack = open(async (insert) => {
      await insert(`INSERT INTO "${schema}".devices (tenant_id, name, status) VALUES ($1, $2, 'online')`, [t.tenantId, device]);
      await insert(`INSERT INTO "${schema}".api_keys (tenant_id, name, role, prefix, key_hash) VALUES ($1, $2, 'admin', $3, $4)`, [
        t.tenantId,
        `race-${device}`,
        key.prefix,
        key.hash,
      ]);
      inserted();
      await new Promise((r) => setTimeout(r, 300));
      throw new Error('roll back');
    }).catch((e: unknown) => {
      if ((e as Error).message !== 'roll back') throw e;
    });
    await ready;
    const group = `race-group-${device}`;
    const [lists, withKey, created] = await Promise.all([
      Promise.all(
        Array.from(
          { length: 4 },
          async () => ((await (await fetch(`${base}/devices`, { headers: lister })).json()) as { devices: { name: string }[] }).devices,
        ),
      ),
      Promise.all(Array.from({ length: 2 }, async () => (await fetch(`${base}/devices`, { headers: { authorization: `Bearer ${key.plaintext}` } })).status)),
      fetch(`${base}/groups`, { method: 'POST', headers: { ...admin, 'content-type': 'application/json' }, body: JSON.stringify({ name: group }) }),
    ]);
    await rolledBack;
    const groups = (await (await fetch(`${base}/groups?limit=200`, { headers: admin })).json()) as { groups: { name: string }[] };
    return {
      sawDevice: lists.some((page) => page.some((d) => d.name === device)),
      withKey,
      createdStatus: created.status,
      groupKept: groups.groups.some((g) => g.name === group),
    };
  }

  it("a transaction of the store: the prepared reads wait for it, another request's write survives its rollback", async () => {
    const seen = await raceOpenTransaction((work) =>
      t.testStore.store.db.transaction().execute((trx: Transaction<Database>) => work((text, params) => sql.raw(bind(text, params)).execute(trx))),
    );
    expect(seen).toEqual({ sawDevice: false, withKey: [401, 401], createdStatus: 201, groupKept: true });
  }, 60_000);

  it('a transaction opened on the PGlite instance itself: the prepared reads wait for it too', async () => {
    const pg = await filePglite();
    const seen = await raceOpenTransaction((work) => pg.transaction((tx: PgliteTransaction) => work((text, params) => tx.query(text, params))));
    expect(seen).toEqual({ sawDevice: false, withKey: [401, 401], createdStatus: 201, groupKept: true });
  }, 60_000);
});

/** Inlines `$n` parameters as quoted literals (test texts only: names and hashes, no quotes). */
function bind(text: string, params: unknown[]): string {
  return text.replace(/\$(\d+)/g, (_m, i: string) => `'${String(params[Number(i) - 1])}'`);
}
