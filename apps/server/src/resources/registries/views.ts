/** A registry row as the API shows it (schemas.ts `Registry`). */
import type { RegistryRow } from './queries.js';
import type { RegistryView } from './schemas.js';

export function registryView(r: RegistryRow): RegistryView {
  return { id: r.id, name: r.name, url: r.url, credentials_ref: r.credentials_ref, created_at: r.created_at.toISOString() };
}
