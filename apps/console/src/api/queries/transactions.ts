import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

/** Release transactions (`GET /release-transactions`, `/release-transactions/{id}`) and a transaction's result manifest. */
export const transactionQueries = {
  list: (query: QueryOf<'/api/v1/release-transactions'>) =>
    queryOptions({ queryKey: ['transactions', 'list', query] as const, queryFn: () => ok(api.GET('/api/v1/release-transactions', { params: { query } })) }),
  detail: (id: string, query: QueryOf<'/api/v1/release-transactions/{id}'>) =>
    queryOptions({
      queryKey: ['transactions', 'detail', id, query] as const,
      queryFn: () => ok(api.GET('/api/v1/release-transactions/{id}', { params: { path: { id }, query } })),
    }),
  /** The result manifest; `state` (the transaction's, as last read) is in the key: the manifest is final once it settles. */
  result: (id: string, state: string | undefined) =>
    queryOptions({
      queryKey: ['transactions', 'result', id, state] as const,
      queryFn: () => ok(api.GET('/api/v1/release-transactions/{id}/result', { params: { path: { id } } })),
    }),
};
