/**
 * The JSON shapes of VEX statements, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { Timestamp } from '../../http/schemas.js';

const Str = Type.Union([Type.String(), Type.Null()]);

export const Statement = Type.Object({
  id: Type.String(),
  format: Type.String(),
  document_digest: Type.String(),
  vulnerability: Type.String(),
  component: Str,
  status: Type.String(),
  justification: Str,
  impact_statement: Str,
  action_statement: Str,
  statement_at: Timestamp,
  recorded_at: Timestamp,
  actor: Type.String(),
});
export type StatementView = Static<typeof Statement>;

/** An attached VEX document and the statements it recorded. */
export const VexAttached = Type.Object({
  artifact_id: Type.String(),
  format: Type.String(),
  digest: Type.String(),
  statements: Type.Array(Statement),
  findings_applied: Type.Integer(),
});
