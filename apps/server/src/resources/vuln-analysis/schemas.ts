/**
 * The JSON shapes of re-analysis runs, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { NullableTimestamp, Timestamp } from '../../http/schemas.js';

export const Run = Type.Object({
  id: Type.String(),
  reason: Type.String(),
  state: Type.String(),
  artifacts_total: Type.Integer(),
  artifacts_done: Type.Integer(),
  findings_added: Type.Integer(),
  findings_removed: Type.Integer({ description: 'findings no longer matched, removed' }),
  findings_withdrawn: Type.Integer({ description: 'of the removed, those raised by a record now withdrawn (each audited as vuln-finding.withdrawn)' }),
  signals: Type.Integer({ description: 'findings that became known exploited while devices run them' }),
  created_at: Timestamp,
  started_at: NullableTimestamp,
  completed_at: NullableTimestamp,
});
export type RunView = Static<typeof Run>;
