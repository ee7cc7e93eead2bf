import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

/** `lists`: every page of every list, the key a write that changes them invalidates. */
const keys = { lists: ['authorizer-keys', 'list'] } as const;

/** Release authorizer keys (`GET /authorizer-keys`). */
export const authorizerKeyQueries = {
  keys,
  list: (query: QueryOf<'/api/v1/authorizer-keys'>) =>
    queryOptions({ queryKey: [...keys.lists, query] as const, queryFn: () => ok(api.GET('/api/v1/authorizer-keys', { params: { query } })) }),
};
