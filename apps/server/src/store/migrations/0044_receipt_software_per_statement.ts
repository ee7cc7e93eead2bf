import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * What a device runs (`vuln_device_software`, migration 0012) follows its accepted receipts in
 * the inserting transaction, as before, but once per statement instead of once per row: the
 * receipt pipeline appends a batch of receipts in one INSERT (device-channel/receipt-pipeline.ts),
 * and a row trigger ran a PL/pgSQL function and an upsert function per receipt. The statement
 * trigger reads the inserted rows from the transition table and writes every (device,
 * component) in one upsert: of several receipts naming the same device and component in one
 * statement, the latest accepted wins, and of those accepted at the same instant the one
 * inserted last, as the row trigger did. What counts is unchanged (spec §2.3 rules 1 and 3):
 * each member's resulting digest, or the single component's.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `DROP TRIGGER release_receipts_device_software ON release_receipts`,
    `DROP FUNCTION vuln_device_software_from_receipt()`,
    `CREATE FUNCTION vuln_device_software_from_receipts() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       INSERT INTO vuln_device_software (tenant_id, device_name, component, digest, source, source_id, release_id, observed_at)
       SELECT DISTINCT ON (s.tenant_id, s.device_name, s.component)
              s.tenant_id, s.device_name, s.component, s.digest, 'receipt', s.id, s.release_id, s.accepted_at
         FROM (
           SELECT n.tenant_id, n.device_name, m.value->>'component' AS component, m.value->>'resulting_digest' AS digest,
                  n.id, n.release_id, n.accepted_at, n.ord
             FROM (SELECT r.*, row_number() OVER () AS ord FROM inserted r) n
             CROSS JOIN LATERAL jsonb_array_elements(n.payload->'members') m
            WHERE jsonb_typeof(n.payload->'members') = 'array'
              AND jsonb_typeof(m.value->'resulting_digest') = 'string' AND jsonb_typeof(m.value->'component') = 'string'
           UNION ALL
           SELECT n.tenant_id, n.device_name, ro.component, n.payload->>'resulting_digest',
                  n.id, n.release_id, n.accepted_at, n.ord
             FROM (SELECT r.*, row_number() OVER () AS ord FROM inserted r) n
             JOIN rollouts ro ON ro.id = n.rollout_id
            WHERE jsonb_typeof(n.payload->'members') IS DISTINCT FROM 'array'
              AND jsonb_typeof(n.payload->'resulting_digest') = 'string'
         ) s
        ORDER BY s.tenant_id, s.device_name, s.component, s.accepted_at DESC, s.ord DESC
       ON CONFLICT (tenant_id, device_name, component) DO UPDATE
         SET digest = EXCLUDED.digest, source = EXCLUDED.source, source_id = EXCLUDED.source_id,
             release_id = EXCLUDED.release_id, observed_at = EXCLUDED.observed_at
         WHERE vuln_device_software.observed_at <= EXCLUDED.observed_at;
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER release_receipts_device_software AFTER INSERT ON release_receipts
       REFERENCING NEW TABLE AS inserted
       FOR EACH STATEMENT EXECUTE FUNCTION vuln_device_software_from_receipts()`,
  ]);
}
