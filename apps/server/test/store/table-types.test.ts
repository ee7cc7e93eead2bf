import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareSchema, jsKind, PG_TYPE_KINDS, readDbColumns, readTableInterfaces, type DbColumn, type TsColumn } from '../helpers/table-types.js';
import { availableDrivers, createTestStore, type TestStore } from '../helpers/store.js';

// The Kysely table interfaces (src/store/*-tables.ts and the areas' tables.ts) against the
// schema the migrations build, on each database the server runs on (docs/architecture.md,
// "The database schema").

let interfaces: TsColumn[];
beforeAll(() => {
  interfaces = readTableInterfaces();
}, 120_000);

/** One sample value of each mapped PostgreSQL type, as the drivers return it. */
const SAMPLES: Readonly<Record<string, string>> = {
  text: `'a'::text`,
  varchar: `'a'::varchar`,
  bpchar: `'a'::bpchar`,
  uuid: `'8a4c1a2e-7d1e-4c8e-9a43-1c2b3d4e5f60'::uuid`,
  int2: `1::int2`,
  int4: `1::int4`,
  int8: `1::int8`,
  float4: `1.5::float4`,
  float8: `1.5::float8`,
  bool: `true`,
  timestamptz: `now()`,
  bytea: `'\\x01'::bytea`,
  jsonb: `'{"a":1}'::jsonb`,
  json: `'{"a":1}'::json`,
  _text: `ARRAY['a']::text[]`,
  _varchar: `ARRAY['a']::varchar[]`,
  _uuid: `ARRAY['8a4c1a2e-7d1e-4c8e-9a43-1c2b3d4e5f60']::uuid[]`,
  _int4: `ARRAY[1]::int4[]`,
};

describe.each(availableDrivers())('table interfaces against the migrated schema on %s', (driver) => {
  let t: TestStore;
  let columns: DbColumn[];
  beforeAll(async () => {
    t = await createTestStore(driver);
    columns = await readDbColumns(t.store);
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it('every table and column of the migrations is declared with its nullability, type and defaults', () => {
    expect(columns.length).toBeGreaterThan(300);
    expect(compareSchema(columns, interfaces)).toEqual([]);
  });

  it('the type mapping says what this driver returns for each PostgreSQL type', async () => {
    expect(Object.keys(SAMPLES).sort()).toEqual(Object.keys(PG_TYPE_KINDS).sort());
    for (const [pgType, expr] of Object.entries(SAMPLES)) {
      const { rows } = await sql<{ v: unknown }>`SELECT ${sql.raw(expr)} AS v`.execute(t.store.db);
      expect(PG_TYPE_KINDS[pgType]!.kinds, `${pgType} on ${driver}`).toContain(jsKind(rows[0]!.v));
    }
    // why an int8 column is declared `string | number`
    const { rows } = await sql<{ v: unknown }>`SELECT 1::int8 AS v`.execute(t.store.db);
    expect(jsKind(rows[0]!.v)).toBe(driver === 'postgres' ? 'string' : 'number');
  });
});

describe('the schema comparison', () => {
  const column = (table: string, name: string, o: Partial<DbColumn> = {}): DbColumn => ({
    table,
    column: name,
    pgType: 'text',
    nullable: false,
    hasDefault: false,
    generatedAlways: false,
    ...o,
  });
  const declared = (table: string, name: string, o: Partial<TsColumn> = {}): TsColumn => ({
    table,
    column: name,
    select: ['string'],
    nullable: false,
    insertOptional: false,
    insertNullable: false,
    insertNever: false,
    digest: false,
    text: 'string',
    ...o,
  });

  it('names the table and column of each kind of drift', () => {
    const db = [
      column('t', 'agree'),
      column('t', 'only_in_db'),
      column('t', 'now_nullable', { nullable: true }),
      column('t', 'not_null'),
      column('t', 'count', { pgType: 'int4' }),
      column('t', 'big', { pgType: 'int8' }),
      column('t', 'seq', { pgType: 'int8', generatedAlways: true, hasDefault: true }),
      column('t', 'no_default'),
      column('t', 'payload_digest'),
      column('t', 'unmapped', { pgType: 'tsvector' }),
      column('only_db_table', 'id'),
    ];
    const ts = [
      declared('t', 'agree'),
      declared('t', 'only_in_ts'),
      declared('t', 'now_nullable'),
      declared('t', 'not_null', { nullable: true, text: 'string | null' }),
      declared('t', 'count', { text: 'string' }),
      declared('t', 'big', { select: ['string'], text: 'string' }),
      declared('t', 'seq', { select: ['number', 'string'] }),
      declared('t', 'no_default', { insertOptional: true }),
      declared('t', 'payload_digest'),
      declared('t', 'unmapped'),
      declared('only_ts_table', 'id'),
    ];
    expect(compareSchema(db, ts)).toEqual([
      'table only_db_table: in the database but in no table interface of Database (src/store/database.ts)',
      'table only_ts_table: in the Database interface but no migration creates it',
      't.only_in_db: column in the database (text) but not in the table interface',
      't.now_nullable: nullable in the database but the interface reads string (add | null)',
      't.not_null: NOT NULL in the database but the interface reads string | null (drop | null)',
      't.count: int4 in the database reads as number but the interface reads string',
      't.big: int8 in the database reads as number | string but the interface reads string',
      't.seq: generated by the database (GENERATED ALWAYS) but the interface lets an insert write it (use ColumnType<T, never, never>)',
      't.no_default: NOT NULL without a default in the database but an insert may omit it in the interface',
      't.payload_digest: a digest column reads as string; declare it ColumnType<Digest> (release-core)',
      't.unmapped: PostgreSQL type tsvector has no TypeScript mapping in test/helpers/table-types.ts (PG_TYPE_KINDS)',
      't.only_in_ts: in the table interface but not in the database',
    ]);
  });

  it('reads a drift made in a table file (in memory) from the TypeScript source', () => {
    const file = resolve(import.meta.dirname, '../../src/store/core-tables.ts');
    const text = readFileSync(file, 'utf8');
    const edited = text
      .replace('  profile: string | null;\n', '')
      .replace('  last_seen: Timestamp | null;', '  last_seen: Timestamp;')
      .replace('  uses: Generated<number>;', '  uses: Generated<string>;')
      .replace('  tags: ColumnType<string[], string[] | undefined, string[]>;', '  tags: number[];');
    expect(edited).not.toBe(text);
    const drifted = readTableInterfaces({ replace: { [file]: edited } });
    const drifts = (ts: TsColumn[]) =>
      compareSchema(
        [
          column('devices', 'profile', { nullable: true }),
          column('devices', 'last_seen', { pgType: 'timestamptz', nullable: true }),
          column('devices', 'tags', { pgType: '_text', hasDefault: true }),
          column('enroll_tokens', 'uses', { pgType: 'int4', hasDefault: true }),
        ],
        ts.filter((c) => ['devices.profile', 'devices.last_seen', 'devices.tags', 'enroll_tokens.uses'].includes(`${c.table}.${c.column}`)),
      );
    expect(drifts(interfaces)).toEqual([]);
    expect(drifts(drifted)).toEqual([
      'devices.profile: column in the database (text, nullable) but not in the table interface',
      'devices.last_seen: nullable in the database but the interface reads Date (add | null)',
      'devices.tags: _text in the database reads as array:string but the interface reads number[]',
      'enroll_tokens.uses: int4 in the database reads as number but the interface reads string',
    ]);
  }, 120_000);
});
