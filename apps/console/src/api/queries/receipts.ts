import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

/** Release receipts (`GET /release-receipts`, `/release-receipts/{id}`). */
export const receiptQueries = {
  list: (query: QueryOf<'/api/v1/release-receipts'>) =>
    queryOptions({ queryKey: ['receipts', 'list', query] as const, queryFn: () => ok(api.GET('/api/v1/release-receipts', { params: { query } })) }),
  detail: (id: string) =>
    queryOptions({ queryKey: ['receipts', 'detail', id] as const, queryFn: () => ok(api.GET('/api/v1/release-receipts/{id}', { params: { path: { id } } })) }),
};
