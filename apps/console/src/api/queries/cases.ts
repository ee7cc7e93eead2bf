import { queryOptions } from '@tanstack/react-query';
import { api, ok, type QueryOf } from '../client';

const keys = {
  /** Every page of every case list (the dashboard's nearest deadlines too), the key a case write invalidates. */
  lists: ['cases', 'list'] as const,
  /** Every page of one case's submissions, attachments, audit trail; its reporting-platform packets. */
  submissions: (id: string) => ['cases', 'submissions', id] as const,
  attachments: (id: string) => ['cases', 'attachments', id] as const,
  audit: (id: string) => ['cases', 'audit', id] as const,
  srpPackets: (id: string) => ['cases', 'srp-packets', id] as const,
};

/** Article 14 cases (`GET /cases`, `/cases/{id}`) and what is read per case. */
export const caseQueries = {
  keys,
  list: (query: QueryOf<'/api/v1/cases'>) =>
    queryOptions({ queryKey: [...keys.lists, query] as const, queryFn: () => ok(api.GET('/api/v1/cases', { params: { query } })) }),
  /**
   * The five nearest deadlines of open and reportable cases, and how many of those cases are
   * overdue: the list comes nearest deadline first, so five of each state are the nearest.
   */
  nearestDeadlines: () =>
    queryOptions({
      queryKey: [...keys.lists, 'nearest-deadlines'] as const,
      queryFn: () =>
        Promise.all([
          ok(api.GET('/api/v1/cases', { params: { query: { limit: 5, state: 'open' } } })),
          ok(api.GET('/api/v1/cases', { params: { query: { limit: 5, state: 'reportable' } } })),
        ]).then(([open, reportable]) => ({
          cases: [...open.cases, ...reportable.cases]
            .filter((c) => c.next_deadline !== null)
            .sort((a, b) => Date.parse(a.next_deadline!.due_at) - Date.parse(b.next_deadline!.due_at))
            .slice(0, 5),
          overdue: [...open.cases, ...reportable.cases].filter((c) => c.next_deadline?.overdue).length,
        })),
    }),
  detail: (id: string) =>
    queryOptions({ queryKey: ['cases', 'detail', id] as const, queryFn: () => ok(api.GET('/api/v1/cases/{id}', { params: { path: { id } } })) }),
  /** The fields of each submission stage, the table the server checks against; it does not change while the server runs. */
  submissionFields: () =>
    queryOptions({ queryKey: ['cases', 'submission-fields'] as const, queryFn: () => ok(api.GET('/api/v1/case-submission-fields')), staleTime: Infinity }),
  submissions: (id: string, query: QueryOf<'/api/v1/cases/{id}/submissions'>) =>
    queryOptions({
      queryKey: [...keys.submissions(id), query] as const,
      queryFn: () => ok(api.GET('/api/v1/cases/{id}/submissions', { params: { path: { id }, query } })),
    }),
  attachments: (id: string, query: QueryOf<'/api/v1/cases/{id}/attachments'>) =>
    queryOptions({
      queryKey: [...keys.attachments(id), query] as const,
      queryFn: () => ok(api.GET('/api/v1/cases/{id}/attachments', { params: { path: { id }, query } })),
    }),
  audit: (id: string, query: QueryOf<'/api/v1/cases/{id}/audit'>) =>
    queryOptions({
      queryKey: [...keys.audit(id), query] as const,
      queryFn: () => ok(api.GET('/api/v1/cases/{id}/audit', { params: { path: { id }, query } })),
    }),
  /** The case's reporting-platform packets, oldest first (up to 200). */
  srpPackets: (id: string) =>
    queryOptions({
      queryKey: keys.srpPackets(id),
      queryFn: () => ok(api.GET('/api/v1/cases/{id}/srp-packets', { params: { path: { id }, query: { limit: 200 } } })),
    }),
  /** One packet; `pid` undefined while none is chosen (the query stays disabled). A packet never changes. */
  srpPacket: (id: string, pid: string | undefined) =>
    queryOptions({
      queryKey: ['cases', 'srp-packet', id, pid] as const,
      queryFn: () => ok(api.GET('/api/v1/cases/{id}/srp-packets/{pid}', { params: { path: { id, pid: pid! } } })),
      enabled: pid !== undefined,
      staleTime: Infinity,
    }),
};
