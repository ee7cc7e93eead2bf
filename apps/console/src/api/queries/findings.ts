import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

/** `lists`: every page of every list, the key a write that changes them invalidates. */
const keys = { lists: ['findings', 'list'] } as const;

/** Vulnerability findings (`GET /findings`). */
export const findingQueries = {
  keys,
  list: (query: QueryOf<'/api/v1/findings'>) =>
    queryOptions({ queryKey: [...keys.lists, query] as const, queryFn: () => ok(api.GET('/api/v1/findings', { params: { query } })) }),
};
