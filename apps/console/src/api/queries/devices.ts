import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

/** `lists`: every page of every device list (the counts, the pickers), the key a write that changes them invalidates. */
const keys = { lists: ['devices', 'list'] } as const;

/** Devices (`GET /devices`, `/devices/{name}`) and what is read per device. */
export const deviceQueries = {
  keys,
  list: (query: QueryOf<'/api/v1/devices'>) =>
    queryOptions({ queryKey: [...keys.lists, query] as const, queryFn: () => ok(api.GET('/api/v1/devices', { params: { query } })) }),
  detail: (name: string) =>
    queryOptions({ queryKey: ['devices', 'detail', name] as const, queryFn: () => ok(api.GET('/api/v1/devices/{name}', { params: { path: { name } } })) }),
  history: (name: string, query: QueryOf<'/api/v1/devices/{name}/history'>) =>
    queryOptions({
      queryKey: ['devices', 'history', name, query] as const,
      queryFn: () => ok(api.GET('/api/v1/devices/{name}/history', { params: { path: { name }, query } })),
    }),
  findings: (name: string, query: QueryOf<'/api/v1/devices/{name}/findings'>) =>
    queryOptions({
      queryKey: ['devices', 'findings', name, query] as const,
      queryFn: () => ok(api.GET('/api/v1/devices/{name}/findings', { params: { path: { name }, query } })),
    }),
  /** The last delivery of each member the device was sent. */
  deliveries: (name: string) =>
    queryOptions({
      queryKey: ['devices', 'deliveries', name] as const,
      queryFn: () => ok(api.GET('/api/v1/devices/{name}/deliveries', { params: { path: { name } } })),
    }),
  /** One log request; `id` undefined until it is made (the query stays disabled). */
  logRequest: (name: string, id: string | undefined) =>
    queryOptions({
      queryKey: ['devices', 'log-request', name, id] as const,
      queryFn: () => ok(api.GET('/api/v1/devices/{name}/log-requests/{id}', { params: { path: { name, id: id! } } })),
      enabled: id !== undefined,
    }),
};
