import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

const keys = {
  /** Every page of every artifact list (the pickers too), the key a write that changes them invalidates. */
  lists: ['artifacts', 'list'] as const,
  /** Every page of one artifact's VEX statements. */
  vex: (id: string) => ['artifacts', 'vex', id] as const,
};

/** Artifacts (`GET /artifacts`, `/artifacts/{id}`) and their VEX statements. */
export const artifactQueries = {
  keys,
  list: (query: QueryOf<'/api/v1/artifacts'>) =>
    queryOptions({ queryKey: [...keys.lists, query] as const, queryFn: () => ok(api.GET('/api/v1/artifacts', { params: { query } })) }),
  detail: (id: string) =>
    queryOptions({ queryKey: ['artifacts', 'detail', id] as const, queryFn: () => ok(api.GET('/api/v1/artifacts/{id}', { params: { path: { id } } })) }),
  vex: (id: string, query: QueryOf<'/api/v1/artifacts/{id}/vex'>) =>
    queryOptions({
      queryKey: [...keys.vex(id), query] as const,
      queryFn: () => ok(api.GET('/api/v1/artifacts/{id}/vex', { params: { path: { id }, query } })),
    }),
};
