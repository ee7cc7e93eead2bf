import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

/** `lists`: every page of the registry list, the key a write that changes it invalidates. */
const keys = { lists: ['registries', 'list'] } as const;

/** OCI registries (`GET /registries`) and a repository's tags. */
export const registryQueries = {
  keys,
  list: (query: QueryOf<'/api/v1/registries'>) =>
    queryOptions({ queryKey: [...keys.lists, query] as const, queryFn: () => ok(api.GET('/api/v1/registries', { params: { query } })) }),
  /** The tags of `repository`; disabled until one is asked for. */
  tags: (id: string, repository: string) =>
    queryOptions({
      queryKey: ['registries', 'tags', id, repository] as const,
      queryFn: () => ok(api.GET('/api/v1/registries/{id}/tags', { params: { path: { id }, query: { repository } } })),
      enabled: repository !== '',
    }),
};
