import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

/** `lists`: every page of every list, the key a write that changes them invalidates. */
const keys = { lists: ['users', 'list'] } as const;

/** Console and API users (`GET /users`). */
export const userQueries = {
  keys,
  list: (query: QueryOf<'/api/v1/users'>) =>
    queryOptions({ queryKey: [...keys.lists, query] as const, queryFn: () => ok(api.GET('/api/v1/users', { params: { query } })) }),
};
