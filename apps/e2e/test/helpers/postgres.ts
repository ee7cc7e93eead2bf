import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

/** Which stores a scenario runs on: always the embedded default, PostgreSQL when configured. */
export function stores(): ('embedded' | 'postgres')[] {
  return process.env.SVC_TEST_DATABASE_URL ? ['embedded', 'postgres'] : ['embedded'];
}

/**
 * A fresh schema name for one server process on SVC_TEST_DATABASE_URL (the server creates
 * it: SVC_DATABASE_SCHEMA) and the drop afterwards, through psql.
 */
export function freshSchema(): { url: string; schema: string; drop: () => void } {
  const url = process.env.SVC_TEST_DATABASE_URL!;
  const schema = `e2e_${randomBytes(6).toString('hex')}`;
  return {
    url,
    schema,
    drop: () => {
      // Under the lock the server's migrations hold (SCHEMA_LOCK_KEY in apps/server/src/store/migrate.ts):
      // kysely's migrator scans every schema, and a drop in mid-scan fails another suite's migration.
      const lockKey = 7_201_958_331;
      execFileSync(
        'psql',
        [url, '-v', 'ON_ERROR_STOP=1', '-q', '-1', '-c', `SELECT pg_advisory_xact_lock(${lockKey})`, '-c', `DROP SCHEMA IF EXISTS "${schema}" CASCADE`],
        { stdio: 'pipe' },
      );
    },
  };
}
