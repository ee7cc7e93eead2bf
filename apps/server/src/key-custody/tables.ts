import type { ColumnType, Generated } from 'kysely';

/** Migration 0050_wrapped_keys; composed into the server's `Database` by src/store/database.ts. */
export interface WrappedKeysTable {
  key_id: string;
  tenant_id: string | null;
  name: string;
  public_key_id: string;
  certificate: Uint8Array | null;
  wrap_alg: string;
  kek_id: string;
  wrapped: Uint8Array;
  created_at: ColumnType<Date, never, never>;
  wrapped_at: Generated<Date>;
}

export interface KeyCustodyTables {
  wrapped_keys: WrappedKeysTable;
}
