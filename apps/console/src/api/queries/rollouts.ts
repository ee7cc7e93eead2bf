import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

const keys = {
  /** Every page of every rollout list (the dashboard's too), the key a write that changes them invalidates. */
  lists: ['rollouts', 'list'] as const,
  /** Every page of one rollout's detail (its devices are paged). */
  detail: (id: string) => ['rollouts', 'detail', id] as const,
};

/** Rollouts (`GET /rollouts`, `/rollouts/{id}`) and a rollout's activity. */
export const rolloutQueries = {
  keys,
  list: (query: QueryOf<'/api/v1/rollouts'>) =>
    queryOptions({ queryKey: [...keys.lists, query] as const, queryFn: () => ok(api.GET('/api/v1/rollouts', { params: { query } })) }),
  detail: (id: string, query: QueryOf<'/api/v1/rollouts/{id}'>) =>
    queryOptions({ queryKey: [...keys.detail(id), query] as const, queryFn: () => ok(api.GET('/api/v1/rollouts/{id}', { params: { path: { id }, query } })) }),
  /** The timeline and failures by reason; `seen` (what the polled detail last showed) is in the key, so a change reads them again. */
  activity: (id: string, seen: string) =>
    queryOptions({
      queryKey: ['rollouts', 'activity', id, seen] as const,
      queryFn: () => ok(api.GET('/api/v1/rollouts/{id}/activity', { params: { path: { id } } })),
    }),
  /** Bytes per delivery path and the deltas made (the totals only: one row of the per-device page). */
  delivery: (id: string) =>
    queryOptions({
      queryKey: ['rollouts', 'delivery', id] as const,
      queryFn: () => ok(api.GET('/api/v1/rollouts/{id}/delivery', { params: { path: { id }, query: { limit: 1 } } })),
    }),
};
