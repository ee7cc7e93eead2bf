import type { Command } from '../unit-of-work.js';
import { upsertBranding, type BrandingFields, type BrandingRecord } from './queries.js';

/** PUT /admin/branding: the tenant's report branding, replaced whole. */
export const updateBranding: Command<BrandingFields, BrandingRecord> = async (uow, fields) => {
  const row = await upsertBranding(uow.trx, uow.tenant, fields, uow.now);
  await uow.audit({ action: 'branding.update', target: 'branding', detail: { company_name: row.company_name, logo: row.logo_data_url !== null } });
  return row;
};
