/**
 * The JSON shapes of case submissions and reporting-platform packets, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { Timestamp, Uuid } from '../../http/schemas.js';
import { STAGES } from './fields.js';
import { SRP_STAGES } from './srp-form.js';

const Record_ = Type.Record(Type.String(), Type.Unknown());

export const Filing = Type.Object({
  id: Uuid,
  submission_id: Uuid,
  recipients: Type.Array(Type.String()),
  member_state: Type.Union([Type.String(), Type.Null()]),
  transport: Type.String(),
  external_reference: Type.Union([Type.String(), Type.Null()]),
  delivery: Record_,
  filed_by: Type.String(),
  filed_at: Timestamp,
  recorded_at: Timestamp,
});
export type FilingView = Static<typeof Filing>;

export const SubmissionItem = Type.Object({
  id: Uuid,
  case_id: Uuid,
  stage: Type.String(),
  supersedes_id: Type.Union([Uuid, Type.Null()]),
  superseded_by: Type.Union([Uuid, Type.Null()]),
  request_id: Type.Union([Uuid, Type.Null()]),
  digest: Type.String({ description: 'sha256 of the exact canonical JSON document' }),
  pdf_digest: Type.String(),
  pdf_length: Type.Integer(),
  created_by: Type.String(),
  created_at: Timestamp,
});
export type SubmissionItemView = Static<typeof SubmissionItem>;

export const Submission = Type.Intersect([SubmissionItem, Type.Object({ document: Record_, filings: Type.Array(Filing) })]);
export type SubmissionView = Static<typeof Submission>;

const NullableString = Type.Union([Type.String(), Type.Null()]);

export const PacketItem = Type.Object({
  id: Uuid,
  case_id: Uuid,
  stage: Type.Enum(SRP_STAGES),
  form_version: Type.String({ description: 'the version of the form field table the packet follows' }),
  submission_id: Type.Union([Uuid, Type.Null()], { description: "the stage's submission its stage fields came from (null: none produced yet)" }),
  digest: Type.String({ description: 'sha256 of the exact canonical JSON packet' }),
  missing: Type.Integer({ description: 'how many required fields have no value' }),
  created_by: Type.String(),
  created_at: Timestamp,
});
export type PacketItemView = Static<typeof PacketItem>;

const SubmissionRef = Type.Union([Type.Object({ id: Uuid, digest: Type.String() }), Type.Null()]);

const PacketField = Type.Object({
  id: Type.String(),
  label: Type.String({ description: 'the label of the form field' }),
  section: Type.Enum(['common', 'vulnerability', 'incident'] as const),
  value: Type.Union([Type.String(), Type.Null()], { description: 'paste-ready text; null when the case, its submissions and the fleet do not know it' }),
  required: Type.Boolean({ description: 'required at this stage' }),
  missing: Type.Boolean({ description: 'required and without a value' }),
});

export const Packet = Type.Object({
  id: Uuid,
  case_id: Uuid,
  stage: Type.Enum(SRP_STAGES),
  kind: Type.String(),
  form: Type.Object({ name: Type.String(), source: Type.String(), version: Type.String() }),
  fields: Type.Array(PacketField, { description: "the form's fields for the stage and case kind, in the form's order" }),
  missing: Type.Array(Type.Object({ id: Type.String(), label: Type.String() }), { description: 'the required fields without a value' }),
  sources: Type.Object({
    submissions: Type.Object(Object.fromEntries(SRP_STAGES.map((s) => [s, SubmissionRef])) as Record<(typeof SRP_STAGES)[number], typeof SubmissionRef>, {
      description: 'the latest submission of each stage the values came from (null: none produced yet)',
    }),
    findings_total: Type.Integer(),
    devices_total: Type.Integer(),
  }),
  digest: Type.String({ description: 'sha256 of the exact canonical JSON packet' }),
  text: Type.String({ description: 'the text/plain rendering (GET .../text)' }),
  created_by: Type.String(),
  created_at: Timestamp,
  submission_id: NullableString,
});
export type PacketView = Static<typeof Packet>;

const FieldSpec = Type.Object({
  name: Type.String(),
  type: Type.Enum(['text', 'member_states', 'tlp', 'boolean', 'severity', 'uuid', 'url'] as const),
  required: Type.Boolean(),
  label: Type.String(),
});

/** The content fields of each stage submission per case kind, and the values of each field's type. */
export const SubmissionFields = Type.Object({
  stages: Type.Array(
    Type.Object({
      stage: Type.Enum(STAGES),
      title: Type.String(),
      fields: Type.Object({ exploited_vulnerability: Type.Array(FieldSpec), severe_incident: Type.Array(FieldSpec) }),
    }),
  ),
  member_states: Type.Array(Type.String()),
  tlp: Type.Array(Type.String()),
  severities: Type.Array(Type.String()),
});
