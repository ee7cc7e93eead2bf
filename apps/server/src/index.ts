/** Public surface of @svc/server (used by benches and integration tests). */
export { buildApp, API_PREFIX, RouteWithoutPermissionError } from './app.js';
export type { AppContext, V1Routes } from './http/context.js';
export { parseConfig, ConfigError } from './config.js';
export type { ServerConfig, Address } from './config.js';
export { openStore, startPglite } from './store/open.js';
export type { Store, Driver, OpenStoreOptions } from './store/open.js';
export { migrateToLatest } from './store/migrate.js';
export { ensureDefaultTenant, createTenant } from './resources/tenants/queries.js';
export { bootstrapAdmin } from './resources/tenants/bootstrap.js';
export { PERMISSIONS, ROLES, ROLE_PERMISSIONS } from './auth/permissions.js';
export type { Permission, Role } from './auth/permissions.js';
export { ServerError, SERVER_ERROR_CODES } from './errors/server-error.js';
export { ERROR_TABLE } from './errors/table.js';
export { newSecret, hashSecret } from './auth/secrets.js';
export { insertApiKey } from './resources/api-keys/queries.js';
