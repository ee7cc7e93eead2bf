/**
 * The JSON shapes of releases, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { Uuid } from '../../http/schemas.js';

export const Release = Type.Object(
  {
    id: Uuid,
    product: Type.String(),
    version: Type.String(),
    payload_digest: Type.String(),
    envelope_digest: Type.String(),
    keyid: Type.String(),
    target: Type.String({ description: 'TUF target path of the exact envelope bytes' }),
    created_at: Type.String(),
  },
  { additionalProperties: false },
);
export type ReleaseView = Static<typeof Release>;
