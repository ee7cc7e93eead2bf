import type { Db } from '../../store/tx.js';

export interface BrandingFields {
  company_name: string;
  primary_color: string;
  accent_color: string;
  logo_data_url: string | null;
}

export interface BrandingRecord extends BrandingFields {
  updated_at: Date | null;
}

/** What a tenant that never set its branding shows (reports use these too). */
const DEFAULTS: BrandingRecord = { company_name: '', primary_color: '#1f2937', accent_color: '#2563eb', logo_data_url: null, updated_at: null };

const COLUMNS = ['company_name', 'primary_color', 'accent_color', 'logo_data_url', 'updated_at'] as const;

/** The tenant's report branding, or the defaults. */
export async function getBranding(db: Db, tenantId: string): Promise<BrandingRecord> {
  return (await db.selectFrom('branding').select(COLUMNS).where('tenant_id', '=', tenantId).executeTakeFirst()) ?? DEFAULTS;
}

/** Replaces the tenant's branding (one row per tenant). */
export async function upsertBranding(db: Db, tenantId: string, fields: BrandingFields, now: Date): Promise<BrandingRecord> {
  return db
    .insertInto('branding')
    .values({ ...fields, tenant_id: tenantId, updated_at: now })
    .onConflict((oc) => oc.column('tenant_id').doUpdateSet({ ...fields, updated_at: now }))
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}
