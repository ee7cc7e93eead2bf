/**
 * The JSON shapes of tenant branding, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { NullableTimestamp } from '../../http/schemas.js';

export const Branding = Type.Object({
  company_name: Type.String(),
  primary_color: Type.String(),
  accent_color: Type.String(),
  logo_data_url: Type.Union([Type.String(), Type.Null()]),
  updated_at: NullableTimestamp,
});
export type BrandingView = Static<typeof Branding>;
