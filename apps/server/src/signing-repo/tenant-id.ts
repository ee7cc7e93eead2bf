import { SigningRepoError } from './errors.js';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function isTenantId(value: unknown): value is string {
  return typeof value === 'string' && UUID_RE.test(value);
}

/**
 * Tenant ids name key directories and URL segments, so they are checked before
 * any use: a lowercase UUID, nothing else (no path traversal through a tenant id).
 */
export function assertTenantId(value: unknown, field = 'tenant_id'): string {
  if (!isTenantId(value)) {
    throw new SigningRepoError('REPO_NOT_FOUND', `${field} must be a lowercase UUID`);
  }
  return value;
}
