/**
 * The JSON shapes of bulk device jobs, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { NullableTimestamp, Timestamp, Uuid } from '../../http/schemas.js';
import { BULK_ACTIONS, BULK_OUTCOMES } from './queries.js';

export const BulkJob = Type.Object({
  id: Uuid,
  action: Type.Enum(BULK_ACTIONS),
  filter: Type.String({ description: 'the filter the job was created with; empty when devices named the selection' }),
  group_id: Type.Union([Type.String(), Type.Null()]),
  tag: Type.Union([Type.String(), Type.Null()]),
  state: Type.Enum(['queued', 'running', 'done', 'failed'] as const, { description: 'queued, then running (leased by one server process), then done' }),
  total: Type.Integer({ description: 'devices the filter selected when the job was created (the selection is frozen)' }),
  succeeded: Type.Integer({ description: 'devices processed without failure (changed or already as asked)' }),
  failed: Type.Integer(),
  created_by: Type.String(),
  created_at: Timestamp,
  finished_at: NullableTimestamp,
});
export type BulkJobView = Static<typeof BulkJob>;

/** A page of a bulk job's devices and their outcomes. */
export const BulkJobDevicePage = Type.Object({
  devices: Type.Array(
    Type.Object({
      name: Type.String(),
      outcome: Type.Enum(BULK_OUTCOMES),
      detail: Type.Union([Type.String(), Type.Null()], { description: 'why it failed; for logs, the log request made (`log request <id>`)' }),
      at: NullableTimestamp,
    }),
  ),
  limit: Type.Integer(),
  offset: Type.Integer(),
});
