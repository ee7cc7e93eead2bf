import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

/** `lists`: every page of every list, the key a write that changes them invalidates. */
const keys = { lists: ['releases', 'list'] } as const;

/** Signed releases (`GET /releases`). */
export const releaseQueries = {
  keys,
  list: (query: QueryOf<'/api/v1/releases'>) =>
    queryOptions({ queryKey: [...keys.lists, query] as const, queryFn: () => ok(api.GET('/api/v1/releases', { params: { query } })) }),
};
