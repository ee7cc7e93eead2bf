import { Type } from 'typebox';
import { audit } from '../../audit/record.js';
import { principalOf } from '../../auth/principal.js';
import type { V1Routes } from '../../http/context.js';
import { ErrorResponses, iso, NullableTimestamp, Strict } from '../../http/schemas.js';

/** Logo as a data URL, capped: it is stored in the database and embedded in every report. */
export const MAX_LOGO_DATA_URL_CHARS = 256 * 1024;
const COLOR = Type.String({ pattern: '^#[0-9a-fA-F]{6}$' });
const DEFAULTS = { company_name: '', primary_color: '#1f2937', accent_color: '#2563eb', logo_data_url: null };

const Branding = Type.Object({
  company_name: Type.String(),
  primary_color: Type.String(),
  accent_color: Type.String(),
  logo_data_url: Type.Union([Type.String(), Type.Null()]),
  updated_at: NullableTimestamp,
});

/** spec 2 + 4: report branding, administered under administration. */
export const adminRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.get('/admin/branding', {
    config: { permission: 'branding.read', summary: 'Report branding' },
    schema: { response: { 200: Branding, ...ErrorResponses } },
  }, async (request) => {
    const p = principalOf(request);
    const row = await db.selectFrom('branding').selectAll().where('tenant_id', '=', p.tenantId).executeTakeFirst();
    return row ? { ...row, updated_at: iso(row.updated_at) } : { ...DEFAULTS, updated_at: null };
  });

  app.put('/admin/branding', {
    config: { permission: 'admin.manage', summary: 'Replace report branding' },
    schema: {
      body: Strict({
        company_name: Type.String({ maxLength: 200 }),
        primary_color: COLOR,
        accent_color: COLOR,
        logo_data_url: Type.Union([
          Type.String({ maxLength: MAX_LOGO_DATA_URL_CHARS, pattern: '^data:image/(png|jpeg|webp|svg\\+xml);base64,[A-Za-z0-9+/]+={0,2}$' }),
          Type.Null(),
        ]),
      }),
      response: { 200: Branding, ...ErrorResponses },
    },
  }, async (request) => {
    const p = principalOf(request);
    const now = ctx.now();
    const values = { ...request.body, tenant_id: p.tenantId, updated_at: now };
    const row = await db.transaction().execute(async (tx) => {
      const r = await tx
        .insertInto('branding')
        .values(values)
        .onConflict((oc) => oc.column('tenant_id').doUpdateSet({ ...request.body, updated_at: now }))
        .returningAll()
        .executeTakeFirstOrThrow();
      await audit(tx, request, { action: 'branding.update', target: 'branding', detail: { company_name: r.company_name, logo: r.logo_data_url !== null } });
      return r;
    });
    return { ...row, updated_at: iso(row.updated_at) };
  });
};
