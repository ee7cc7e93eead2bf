import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

/** `lists`: every page of every list, the key a write that changes them invalidates. */
const keys = { lists: ['api-keys', 'list'] } as const;

/** API keys (`GET /api-keys`). */
export const apiKeyQueries = {
  keys,
  list: (query: QueryOf<'/api/v1/api-keys'>) =>
    queryOptions({ queryKey: [...keys.lists, query] as const, queryFn: () => ok(api.GET('/api/v1/api-keys', { params: { query } })) }),
};
