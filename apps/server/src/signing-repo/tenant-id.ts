import { isUuid } from '@svc/release-core';
import { SigningRepoError } from './errors.js';

/**
 * Tenant ids name key directories and URL segments, so they are checked before
 * any use: a lowercase UUID, nothing else (no path traversal through a tenant id).
 */
export function assertTenantId(value: unknown, field = 'tenant_id'): string {
  if (!isUuid(value)) {
    throw new SigningRepoError('REPO_NOT_FOUND', `${field} must be a lowercase UUID`);
  }
  return value;
}
