import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

/** `lists`: every page of every group list (the pickers too), the key a write that changes them invalidates. */
const keys = { lists: ['groups', 'list'] } as const;

/** Device groups (`GET /groups`, `/groups/{id}`). */
export const groupQueries = {
  keys,
  list: (query: QueryOf<'/api/v1/groups'>) =>
    queryOptions({ queryKey: [...keys.lists, query] as const, queryFn: () => ok(api.GET('/api/v1/groups', { params: { query } })) }),
  detail: (id: string) =>
    queryOptions({ queryKey: ['groups', 'detail', id] as const, queryFn: () => ok(api.GET('/api/v1/groups/{id}', { params: { path: { id } } })) }),
};
