import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServerConfig } from '../config.js';
import type { Store } from '../store/open.js';
import type { SigningRepository } from '../signing-repo/index.js';
import type { PublishingOptions } from '../resources/publishing.js';
import type { ApiKeyCache } from '../auth/api-key-cache.js';
import type { DeviceCredentialCache } from '../device-channel/credential-cache.js';
import type { UnitOfWorkHooks } from '../resources/unit-of-work.js';
import type { EvidenceOptions } from '../resources/case-submissions/transport.js';

/**
 * Everything a route module needs, passed explicitly (no globals). Other areas add an
 * OPTIONAL field here with a one-line edit when they need a service of their own
 * (e.g. `signingRepo?: SigningRepo`), and `main.ts` fills it.
 */
export interface AppContext {
  /** `store.db` is the typed query builder (Kysely<Database>). */
  store: Store;
  config: ServerConfig;
  /** The clock seam: every "now" on the server comes from here. */
  now(): Date;
  /** fastify logger option; false in tests. */
  logger?: boolean | Record<string, unknown>;
  /** Max JSON body bytes (default 1 MiB); multipart routes set their own limits. */
  bodyLimit?: number;
  /** Session lifetime in seconds (default 12 h). */
  sessionTtlSeconds?: number;
  /** The per-tenant TUF signing repository (artifacts and releases publish through it). */
  signingRepo?: SigningRepository;
  /** Publishing settings and test hooks (resources/publishing.ts). */
  publishing?: PublishingOptions;
  /** Remembered API-key lookups (auth/api-key-cache.ts); buildApp opens one when absent. */
  apiKeyCache?: ApiKeyCache;
  /** The device channel's remembered authentications when it runs in this process (main.ts): cleared on decommission. */
  deviceCredentials?: Pick<DeviceCredentialCache, 'clear'>;
  /** Article 14 evidence settings: submission transports (resources/case-submissions/transport.ts). */
  evidence?: EvidenceOptions;
  /** The web console's build (apps/console/dist), served at `/` by http/console.ts; none when unset. */
  consoleDir?: string;
  /** Fault-injection seams for tests (never set by main.ts). */
  hooks?: { unitOfWork?: UnitOfWorkHooks };
}

/**
 * The shape of every `src/routes/v1/<area>.ts` module:
 *
 *   export const devicesRoutes: V1Routes = async (app, { ctx }) => {
 *     app.get('/devices', { config: { permission: 'devices.read' }, schema: {...} }, async (req) => ...);
 *   };
 *
 * registered under `/api/v1` by one line in `app.ts`.
 */
export type V1Routes = FastifyPluginAsyncTypebox<{ ctx: AppContext }>;
