import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { sendUpdated, updateResponses } from '../../http/prefer.js';
import { ErrorResponses, iso, Strict } from '../../http/schemas.js';
import { updateBranding } from '../../resources/branding/commands.js';
import { getBranding, type BrandingRecord } from '../../resources/branding/queries.js';
import { Branding, type BrandingView } from '../../resources/branding/schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

const COLOR = Type.String({ pattern: '^#[0-9a-fA-F]{6}$' });

function brandingJson(b: BrandingRecord): BrandingView {
  return {
    company_name: b.company_name,
    primary_color: b.primary_color,
    accent_color: b.accent_color,
    logo_data_url: b.logo_data_url,
    updated_at: iso(b.updated_at),
  };
}

/** spec §4: report branding, administered under administration. */
export const adminRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.get(
    '/admin/branding',
    {
      config: { permission: 'branding.read', summary: 'Report branding' },
      schema: { response: { 200: Branding, ...ErrorResponses } },
    },
    async (request) => brandingJson(await getBranding(db, principalOf(request).tenantId)),
  );

  app.put(
    '/admin/branding',
    {
      config: { permission: 'admin.manage', summary: 'Replace report branding (204; 200 with the branding on Prefer: return=representation)' },
      schema: {
        body: Strict({
          company_name: Type.String({ maxLength: 200 }),
          primary_color: COLOR,
          accent_color: COLOR,
          logo_data_url: Type.Union([
            Type.String({ maxLength: SERVER_LIMITS.logoDataUrlChars, pattern: '^data:image/(png|jpeg|webp|svg\\+xml);base64,[A-Za-z0-9+/]+={0,2}$' }),
            Type.Null(),
          ]),
        }),
        response: { ...updateResponses(Branding), ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const { company_name, primary_color, accent_color, logo_data_url } = request.body;
      const row = await execute(ctx, request, updateBranding, { company_name, primary_color, accent_color, logo_data_url });
      return sendUpdated(request, reply, () => brandingJson(row));
    },
  );
};
