import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

/** Device bulk jobs (`GET /device-bulk-jobs/{id}`) and their per-device outcomes. */
export const bulkJobQueries = {
  detail: (id: string) =>
    queryOptions({ queryKey: ['bulk-jobs', 'detail', id] as const, queryFn: () => ok(api.GET('/api/v1/device-bulk-jobs/{id}', { params: { path: { id } } })) }),
  /** The outcomes page; `progress` (the job's state and processed count) is in the key, so it is read again as the job moves on. */
  devices: (id: string, query: QueryOf<'/api/v1/device-bulk-jobs/{id}/devices'>, progress: readonly [state: string, processed: number]) =>
    queryOptions({
      queryKey: ['bulk-jobs', 'devices', id, query, ...progress] as const,
      queryFn: () => ok(api.GET('/api/v1/device-bulk-jobs/{id}/devices', { params: { path: { id }, query } })),
    }),
};
