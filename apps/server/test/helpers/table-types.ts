/**
 * The check that the Kysely table interfaces (src/store/database.ts and the `*-tables.ts` files
 * it composes) say what the migrated database holds: the same tables, the same columns, the
 * same nullability, a TypeScript type that matches what the drivers return for the column's
 * PostgreSQL type, and insert types the database accepts (a column the interface lets an
 * insert omit has a default; a column the database generates cannot be written).
 *
 * Three parts, each testable on its own:
 * - `readDbColumns(store)`: `information_schema.columns` of a migrated schema;
 * - `readTableInterfaces()`: the `Database` interface read with the TypeScript compiler API
 *   (optionally with some files' text replaced, to prove that a drift is caught);
 * - `compareSchema(db, ts)`: the drifts, one message per table or column, naming both.
 */
import { dirname, resolve } from 'node:path';
import { sql } from 'kysely';
import ts from 'typescript';
import type { Store } from '../../src/store/open.js';

/** One column as the migrated database has it. */
export interface DbColumn {
  table: string;
  column: string;
  /** `udt_name`: `text`, `int8`, `timestamptz`, `_text` (an array of text), ... */
  pgType: string;
  nullable: boolean;
  /** A default, an identity or a generated expression: an insert may omit it. */
  hasDefault: boolean;
  /** `GENERATED ALWAYS` (identity or stored expression): an insert or update must not name it. */
  generatedAlways: boolean;
}

/**
 * What a TypeScript type can hold, as far as the comparison cares. `json` is any parsed JSON
 * value the interface narrows (an object, `unknown`, a record); `array:<kind>` an array of that.
 */
export type TsKind = 'string' | 'number' | 'boolean' | 'Date' | 'Uint8Array' | 'unknown' | 'object' | `array:${string}` | 'other';

/** One column as a table interface declares it. */
export interface TsColumn {
  table: string;
  column: string;
  /** The kinds of the select type, `null` removed. */
  select: TsKind[];
  /** The select type includes `null`. */
  nullable: boolean;
  /** The insert type includes `undefined` (e.g. `Generated<T>`): an insert may omit it. */
  insertOptional: boolean;
  /** The insert type includes `null`. */
  insertNullable: boolean;
  /** The insert type is `never`: the code never writes it. */
  insertNever: boolean;
  /** The select type is release-core's `Digest` (`sha256:${string}`), `null` aside. */
  digest: boolean;
  /** The select type as written, for messages. */
  text: string;
}

const SERVER_SRC = resolve(import.meta.dirname, '../../src');
export const DATABASE_TS = resolve(SERVER_SRC, 'store/database.ts');

/** The tables of the migrator itself: not part of the application's schema. */
const MIGRATOR_TABLES = new Set(['kysely_migration', 'kysely_migration_lock']);

export async function readDbColumns(store: Store): Promise<DbColumn[]> {
  const rows = await sql<{
    table_name: string;
    column_name: string;
    udt_name: string;
    is_nullable: 'YES' | 'NO';
    column_default: string | null;
    is_identity: 'YES' | 'NO';
    identity_generation: string | null;
    is_generated: 'ALWAYS' | 'NEVER';
  }>`
    SELECT c.table_name, c.column_name, c.udt_name, c.is_nullable, c.column_default,
           c.is_identity, c.identity_generation, c.is_generated
    FROM information_schema.columns c
    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
    WHERE c.table_schema = ${store.schema} AND t.table_type = 'BASE TABLE'
    ORDER BY c.table_name, c.ordinal_position`.execute(store.db);
  return rows.rows
    .filter((r) => !MIGRATOR_TABLES.has(r.table_name))
    .map((r) => ({
      table: r.table_name,
      column: r.column_name,
      pgType: r.udt_name,
      nullable: r.is_nullable === 'YES',
      hasDefault: r.column_default !== null || r.is_identity === 'YES' || r.is_generated === 'ALWAYS',
      generatedAlways: r.is_generated === 'ALWAYS' || r.identity_generation === 'ALWAYS',
    }));
}

export interface ReadInterfacesOptions {
  /** Absolute path of a source file → the text to use instead of the file's (a drift made in memory). */
  replace?: Readonly<Record<string, string>>;
}

/** The columns of every table of the `Database` interface, read with the TypeScript compiler. */
export function readTableInterfaces(options: ReadInterfacesOptions = {}): TsColumn[] {
  const compilerOptions: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2023.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: [],
  };
  const host = ts.createCompilerHost(compilerOptions, true);
  const replace = new Map(Object.entries(options.replace ?? {}).map(([file, text]) => [resolve(file), text]));
  if (replace.size > 0) {
    const getSourceFile = host.getSourceFile.bind(host);
    const readFile = host.readFile.bind(host);
    host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
      const text = replace.get(resolve(fileName));
      return text === undefined ? getSourceFile(fileName, languageVersion, onError, shouldCreate) : ts.createSourceFile(fileName, text, languageVersion, true);
    };
    host.readFile = (fileName) => replace.get(resolve(fileName)) ?? readFile(fileName);
  }
  const program = ts.createProgram({ rootNames: [DATABASE_TS], options: compilerOptions, host });
  const errors = ts.getPreEmitDiagnostics(program).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) {
    throw new Error(
      `the table interfaces do not compile:\n${ts.formatDiagnostics(errors, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => dirname(DATABASE_TS), getNewLine: () => '\n' })}`,
    );
  }
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(DATABASE_TS)!;
  const decl = source.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === 'Database');
  if (decl === undefined) throw new Error(`${DATABASE_TS} declares no interface Database`);
  const database = checker.getTypeAtLocation(decl);
  const out: TsColumn[] = [];
  for (const tableSymbol of checker.getPropertiesOfType(database)) {
    const tableType = checker.getTypeOfSymbol(tableSymbol);
    for (const columnSymbol of checker.getPropertiesOfType(tableType)) {
      const columnType = checker.getTypeOfSymbol(columnSymbol);
      const selectParts = kyselyPart(checker, columnType, '__select__');
      const insertParts = kyselyPart(checker, columnType, '__insert__');
      const nonNull = selectParts.filter((t) => !(t.flags & ts.TypeFlags.Null));
      out.push({
        table: tableSymbol.name,
        column: columnSymbol.name,
        select: [...new Set(nonNull.flatMap((t) => kindsOf(checker, t)))].sort(),
        nullable: nonNull.length < selectParts.length,
        insertOptional: insertParts.some((t) => (t.flags & ts.TypeFlags.Undefined) !== 0),
        insertNullable: insertParts.some((t) => (t.flags & ts.TypeFlags.Null) !== 0),
        insertNever: insertParts.every((t) => (t.flags & ts.TypeFlags.Never) !== 0),
        digest: nonNull.length > 0 && nonNull.every(isDigestType),
        text: selectParts.map((t) => checker.typeToString(t)).join(' | '),
      });
    }
  }
  return out;
}

/** The select or insert type of a column: `ColumnType<S, I, U>` carries them as phantom properties. */
function kyselyPart(checker: ts.TypeChecker, type: ts.Type, part: '__select__' | '__insert__'): ts.Type[] {
  // Kysely unwraps each member of a union (`Timestamp | null` reads as `Date | null`).
  return unionParts(type).flatMap((member) => {
    const property = member.getProperty(part);
    return property === undefined ? [member] : unionParts(checker.getTypeOfSymbol(property));
  });
}

/** release-core's `Digest`: the template literal `sha256:${string}`. */
function isDigestType(type: ts.Type): boolean {
  if (!(type.flags & ts.TypeFlags.TemplateLiteral)) return false;
  const t = type as ts.TemplateLiteralType;
  return t.texts.length === 2 && t.texts[0] === 'sha256:' && t.texts[1] === '' && (t.types[0]!.flags & ts.TypeFlags.String) !== 0;
}

function unionParts(type: ts.Type): ts.Type[] {
  return type.isUnion() ? type.types : [type];
}

function kindsOf(checker: ts.TypeChecker, type: ts.Type): TsKind[] {
  const f = type.flags;
  if (f & (ts.TypeFlags.Unknown | ts.TypeFlags.Any)) return ['unknown'];
  if (f & (ts.TypeFlags.String | ts.TypeFlags.StringLiteral | ts.TypeFlags.TemplateLiteral)) return ['string'];
  if (f & (ts.TypeFlags.Number | ts.TypeFlags.NumberLiteral)) return ['number'];
  if (f & (ts.TypeFlags.Boolean | ts.TypeFlags.BooleanLiteral)) return ['boolean'];
  if (type.isUnion()) return type.types.flatMap((t) => kindsOf(checker, t));
  if (checker.isArrayType(type)) {
    const [element] = checker.getTypeArguments(type as ts.TypeReference);
    const inner = element === undefined ? ['unknown'] : [...new Set(kindsOf(checker, element))].sort();
    return [`array:${inner.join('|')}`];
  }
  const name = type.getSymbol()?.name;
  if (name === 'Date') return ['Date'];
  if (name === 'Uint8Array' || name === 'Buffer') return ['Uint8Array'];
  if (f & ts.TypeFlags.Object) return ['object'];
  return ['other'];
}

/** Kinds any parsed JSON value may be declared as. */
const JSON_KINDS: readonly TsKind[] = ['unknown', 'object', 'string', 'number', 'boolean'];

/** The kind of a value a driver returned, in the terms of `TsKind`. */
export function jsKind(value: unknown): TsKind {
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (value instanceof Date) return 'Date';
  if (value instanceof Uint8Array) return 'Uint8Array';
  if (Array.isArray(value)) return `array:${[...new Set(value.map(jsKind))].sort().join('|')}`;
  if (typeof value === 'object' && value !== null) return 'object';
  return 'other';
}

/**
 * What each PostgreSQL type a migration uses may be declared as: the kinds the two drivers
 * (node-postgres, PGlite) return for it. `int8` comes back as text from node-postgres and as
 * a number from PGlite, so its interface must accept both (`Int8` in src/store/column-types.ts).
 */
export const PG_TYPE_KINDS: Readonly<Record<string, { kinds: readonly TsKind[]; exact?: boolean }>> = {
  text: { kinds: ['string'] },
  varchar: { kinds: ['string'] },
  bpchar: { kinds: ['string'] },
  uuid: { kinds: ['string'] },
  int2: { kinds: ['number'] },
  int4: { kinds: ['number'] },
  int8: { kinds: ['number', 'string'], exact: true },
  float4: { kinds: ['number'] },
  float8: { kinds: ['number'] },
  bool: { kinds: ['boolean'] },
  timestamptz: { kinds: ['Date'] },
  bytea: { kinds: ['Uint8Array'] },
  jsonb: {
    kinds: JSON_KINDS.concat(
      JSON_KINDS.map((k) => `array:${k}` as const),
      ['array:unknown'],
    ),
  },
  json: { kinds: JSON_KINDS.concat(JSON_KINDS.map((k) => `array:${k}` as const)) },
  _text: { kinds: ['array:string'] },
  _varchar: { kinds: ['array:string'] },
  _uuid: { kinds: ['array:string'] },
  _int4: { kinds: ['array:number'] },
};

/**
 * Every difference between the migrated database and the table interfaces, one line each,
 * naming the table and the column. Empty when they agree.
 */
export function compareSchema(db: readonly DbColumn[], ts: readonly TsColumn[]): string[] {
  const drifts: string[] = [];
  const dbTables = new Map<string, Map<string, DbColumn>>();
  for (const c of db) {
    if (!dbTables.has(c.table)) dbTables.set(c.table, new Map());
    dbTables.get(c.table)!.set(c.column, c);
  }
  const tsTables = new Map<string, Map<string, TsColumn>>();
  for (const c of ts) {
    if (!tsTables.has(c.table)) tsTables.set(c.table, new Map());
    tsTables.get(c.table)!.set(c.column, c);
  }
  for (const table of dbTables.keys()) {
    if (!tsTables.has(table)) drifts.push(`table ${table}: in the database but in no table interface of Database (src/store/database.ts)`);
  }
  for (const table of tsTables.keys()) {
    if (!dbTables.has(table)) drifts.push(`table ${table}: in the Database interface but no migration creates it`);
  }
  for (const [table, dbColumns] of dbTables) {
    const tsColumns = tsTables.get(table);
    if (tsColumns === undefined) continue;
    for (const [column, d] of dbColumns) {
      const t = tsColumns.get(column);
      const at = `${table}.${column}`;
      if (t === undefined) {
        drifts.push(`${at}: column in the database (${d.pgType}${d.nullable ? ', nullable' : ''}) but not in the table interface`);
        continue;
      }
      drifts.push(...compareColumn(at, d, t));
    }
    for (const column of tsColumns.keys()) {
      if (!dbColumns.has(column)) drifts.push(`${table}.${column}: in the table interface but not in the database`);
    }
  }
  return drifts;
}

/** Columns holding a `sha256:<hex>` digest are named `digest` or `<something>_digest`. */
const DIGEST_COLUMN = /(^|_)digest$/;

function compareColumn(at: string, d: DbColumn, t: TsColumn): string[] {
  const drifts: string[] = [];
  if (d.nullable && !t.nullable) drifts.push(`${at}: nullable in the database but the interface reads ${t.text} (add | null)`);
  if (!d.nullable && t.nullable) drifts.push(`${at}: NOT NULL in the database but the interface reads ${t.text} (drop | null)`);
  const rule = PG_TYPE_KINDS[d.pgType];
  if (rule === undefined) {
    drifts.push(`${at}: PostgreSQL type ${d.pgType} has no TypeScript mapping in test/helpers/table-types.ts (PG_TYPE_KINDS)`);
  } else {
    const stray = t.select.filter((k) => !rule.kinds.includes(k));
    const missing = rule.exact === true ? rule.kinds.filter((k) => !t.select.includes(k)) : [];
    if (t.select.length === 0 || stray.length > 0 || missing.length > 0) {
      drifts.push(`${at}: ${d.pgType} in the database reads as ${rule.kinds.join(' | ')} but the interface reads ${t.text}`);
    }
  }
  if (d.generatedAlways && !t.insertNever)
    drifts.push(`${at}: generated by the database (GENERATED ALWAYS) but the interface lets an insert write it (use ColumnType<T, never, never>)`);
  if (t.insertNever && !d.hasDefault && !d.nullable) drifts.push(`${at}: NOT NULL without a default in the database but the interface never writes it`);
  if (t.insertOptional && !d.hasDefault && !d.nullable)
    drifts.push(`${at}: NOT NULL without a default in the database but an insert may omit it in the interface`);
  if (t.insertNullable && !d.nullable) drifts.push(`${at}: NOT NULL in the database but the interface lets an insert write null`);
  if (DIGEST_COLUMN.test(d.column) && d.pgType === 'text' && !t.digest)
    drifts.push(`${at}: a digest column reads as ${t.text}; declare it ColumnType<Digest> (release-core)`);
  return drifts;
}
