import type { BlobTables } from '../blobs/tables.js';
import type { DeviceChannelTables } from '../device-channel/tables.js';
import type { KeyCustodyTables } from '../key-custody/tables.js';
import type { CaseTables } from './case-tables.js';
import type { CoreTables } from './core-tables.js';
import type { DeltaTables } from './delta-tables.js';
import type { ReleaseTables } from './release-tables.js';
import type { SigningRepoTables } from '../signing-repo/tables.js';
import type { VulnTables } from './vuln-tables.js';

/**
 * The whole schema as kysely sees it. Each area declares its table interfaces in its own
 * file and adds ONE name to the `extends` list below (e.g. `SigningRepoTables`).
 */
export interface Database
  extends CoreTables, DeviceChannelTables, ReleaseTables, SigningRepoTables, VulnTables, CaseTables, KeyCustodyTables, DeltaTables, BlobTables {}
