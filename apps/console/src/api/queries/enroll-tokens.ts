import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

/** `lists`: every page of every list, the key a write that changes them invalidates. */
const keys = { lists: ['enroll-tokens', 'list'] } as const;

/** Enrollment tokens (`GET /enroll-tokens`). */
export const enrollTokenQueries = {
  keys,
  list: (query: QueryOf<'/api/v1/enroll-tokens'>) =>
    queryOptions({ queryKey: [...keys.lists, query] as const, queryFn: () => ok(api.GET('/api/v1/enroll-tokens', { params: { query } })) }),
};
