import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PREPARE_MARK } from '../../src/store/prepared.js';
import { createTestStore, type TestStore } from '../helpers/store.js';

/**
 * Marked statements on PGlite run as named prepared statements whose wire response the store
 * reads itself (src/store/pglite-schema.ts). They must answer exactly what PGlite's own
 * query() answers, and fail the same way.
 */
describe('PGlite prepared statements (real PGlite)', () => {
  let a: TestStore;
  let b: TestStore;
  const typed = sql`SELECT 1::int AS i4, 9007199254740991::bigint AS i8, 'x''y'::text AS t, NULL::text AS n, true AS b,
    '2026-03-04T05:06:07.123Z'::timestamptz AS ts, '{"k":[1,2]}'::json AS j, ARRAY['a','b,c']::text[] AS arr,
    gen_random_uuid() IS NOT NULL AS u, 'ü 😀'::text AS utf8`;

  beforeAll(async () => {
    a = await createTestStore('pglite');
    b = await createTestStore('pglite', { shareWith: undefined });
    await sql`CREATE TABLE kv (k text PRIMARY KEY, v int)`.execute(a.store.db);
    await sql`CREATE TABLE kv (k text PRIMARY KEY, v int)`.execute(b.store.db);
    await sql`INSERT INTO kv SELECT 'k' || i, i FROM generate_series(1, 5) AS i`.execute(a.store.db);
    await sql`INSERT INTO kv VALUES ('only-b', 42)`.execute(b.store.db);
  }, 60_000);
  afterAll(async () => {
    await a?.dispose();
    await b?.dispose();
  });

  it('answers what query() answers, for every common type, twice (parse, then bind only)', async () => {
    const plain = (await typed.execute(a.store.db)).rows;
    for (let i = 0; i < 2; i++) expect((await sql`${sql.raw(PREPARE_MARK)} ${typed}`.execute(a.store.db)).rows).toEqual(plain);
  });

  it('binds parameters; many rows; no rows', async () => {
    const q = (min: number) => sql<{ k: string; v: number }>`${sql.raw(PREPARE_MARK)} SELECT k, v FROM kv WHERE v >= ${min} ORDER BY v`.execute(a.store.db);
    expect((await q(3)).rows).toEqual([
      { k: 'k3', v: 3 },
      { k: 'k4', v: 4 },
      { k: 'k5', v: 5 },
    ]);
    expect((await q(99)).rows).toEqual([]);
  });

  it('the same text in two schemas sharing one PGlite reads each its own table', async () => {
    const q = (t: TestStore) => sql<{ k: string }>`${sql.raw(PREPARE_MARK)} SELECT k FROM kv ORDER BY k LIMIT 1`.execute(t.store.db);
    expect((await q(a)).rows).toEqual([{ k: 'k1' }]);
    expect((await q(b)).rows).toEqual([{ k: 'only-b' }]);
    expect((await q(a)).rows).toEqual([{ k: 'k1' }]);
  });

  it('an error is the same DatabaseError (code, message) and the session stays usable', async () => {
    const plain = await sql`SELECT 1 / ${0}::int AS x`.execute(a.store.db).catch((e: unknown) => e as { code: string; message: string });
    const prepared = await sql`${sql.raw(PREPARE_MARK)} SELECT 1 / ${0}::int AS x`
      .execute(a.store.db)
      .catch((e: unknown) => e as { code: string; message: string });
    expect(prepared).toMatchObject({ code: '22012', message: (plain as { message: string }).message });
    expect((await sql`${sql.raw(PREPARE_MARK)} SELECT 2 AS two`.execute(a.store.db)).rows).toEqual([{ two: 2 }]);
  });

  it('a plan made stale by DDL is re-prepared once', async () => {
    const q = () => sql`${sql.raw(PREPARE_MARK)} SELECT * FROM kv WHERE k = ${'k1'}`.execute(a.store.db);
    expect((await q()).rows).toEqual([{ k: 'k1', v: 1 }]);
    await sql`ALTER TABLE kv ADD COLUMN w text DEFAULT 'new'`.execute(a.store.db);
    expect((await q()).rows).toEqual([{ k: 'k1', v: 1, w: 'new' }]);
  });

  it('a marked statement that writes goes through query(), not the read-only path', async () => {
    const r = await sql`${sql.raw(PREPARE_MARK)} UPDATE kv SET v = v + 1 WHERE k = ${'k2'}`.execute(a.store.db);
    expect(r.numAffectedRows).toBe(1n);
  });
});
