/** The JSON shape of a registry (routes/v1/registries.ts `Registry`). */
import type { RegistryRow } from './queries.js';

export interface RegistryView {
  id: string;
  name: string;
  url: string;
  credentials_ref: string | null;
  created_at: string;
}

export function registryView(r: RegistryRow): RegistryView {
  return { id: r.id, name: r.name, url: r.url, credentials_ref: r.credentials_ref, created_at: r.created_at.toISOString() };
}
