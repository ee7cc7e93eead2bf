/**
 * The JSON shapes of TUF online-key rotations, declared once: the routes answer with them (the OpenAPI document,
 * the serializer).
 */
import { Type } from 'typebox';
import { Timestamp } from '../../http/schemas.js';
import { ONLINE_ROLES } from '../../signing-repo/index.js';

const KeyIds = Type.Object({
  targets: Type.Optional(Type.String()),
  snapshot: Type.Optional(Type.String()),
  timestamp: Type.Optional(Type.String()),
});

export const Rotation = Type.Object({
  /** `committed`: root N+1 is the repository's root and the new keys sign; `prepared`: waiting for the signed root. */
  state: Type.Union([Type.Literal('committed'), Type.Literal('prepared'), Type.Literal('cancelled')]),
  root_version: Type.Integer(),
  roles: Type.Array(Type.Enum([...ONLINE_ROLES])),
  key_ids: KeyIds,
  /** The unsigned root N+1 to sign offline (`prepared` only). */
  unsigned_root: Type.Optional(Type.Unknown()),
});

export const Pending = Type.Object({
  root_version: Type.Integer(),
  current_root_version: Type.Integer(),
  /** A root was committed after the preparation: cancel and prepare again. */
  stale: Type.Boolean(),
  roles: Type.Array(Type.Enum([...ONLINE_ROLES])),
  key_ids: KeyIds,
  created_at: Timestamp,
  unsigned_root: Type.Unknown(),
});

/** The root key's deletion from the server. */
export const RootKeyDeleted = Type.Object({ key_id: Type.String(), deleted: Type.Boolean() });

/** The root key, exported for offline custody. */
export const RootKeyExport = Type.Object({ key_id: Type.String(), private_key_pem: Type.String() });
