import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

/** `lists`: every page of every list, the key a write that changes them invalidates. */
const keys = { lists: ['audit', 'list'] } as const;

/** The audit trail (`GET /audit`). */
export const auditQueries = {
  keys,
  list: (query: QueryOf<'/api/v1/audit'>) =>
    queryOptions({ queryKey: [...keys.lists, query] as const, queryFn: () => ok(api.GET('/api/v1/audit', { params: { query } })) }),
};
