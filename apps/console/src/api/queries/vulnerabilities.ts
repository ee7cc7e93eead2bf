import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

/** One vulnerability (`GET /vulnerabilities/{id}`) and its exposure in the fleet. */
export const vulnerabilityQueries = {
  detail: (id: string) =>
    queryOptions({
      queryKey: ['vulnerabilities', 'detail', id] as const,
      queryFn: () => ok(api.GET('/api/v1/vulnerabilities/{id}', { params: { path: { id } } })),
    }),
  exposure: (id: string, query: QueryOf<'/api/v1/vulnerabilities/{id}/exposure'>) =>
    queryOptions({
      queryKey: ['vulnerabilities', 'exposure', id, query] as const,
      queryFn: () => ok(api.GET('/api/v1/vulnerabilities/{id}/exposure', { params: { path: { id }, query } })),
    }),
};
