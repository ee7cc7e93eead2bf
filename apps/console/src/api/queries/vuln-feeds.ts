import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

/** `imports`: every page of the import list, the key an import invalidates. */
const keys = { imports: ['vuln-feeds', 'imports'] } as const;

/** Vulnerability feeds: freshness (`GET /vuln-feeds`), imports and analysis runs. */
export const feedQueries = {
  keys,
  freshness: () => queryOptions({ queryKey: ['vuln-feeds', 'freshness'] as const, queryFn: () => ok(api.GET('/api/v1/vuln-feeds')) }),
  imports: (query: QueryOf<'/api/v1/vuln-feeds/imports'>) =>
    queryOptions({ queryKey: [...keys.imports, query] as const, queryFn: () => ok(api.GET('/api/v1/vuln-feeds/imports', { params: { query } })) }),
  runs: (query: QueryOf<'/api/v1/vuln-analysis/runs'>) =>
    queryOptions({ queryKey: ['vuln-feeds', 'runs', query] as const, queryFn: () => ok(api.GET('/api/v1/vuln-analysis/runs', { params: { query } })) }),
};
