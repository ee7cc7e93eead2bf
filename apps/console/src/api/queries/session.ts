import { queryOptions } from '@tanstack/react-query';
import { api, ok } from '../client';

/** The session: who is logged in (`GET /auth/me`). */
export const sessionQueries = {
  /** A 401 here sends the router to the login page, so it is not retried. */
  me: () => queryOptions({ queryKey: ['me'] as const, queryFn: () => ok(api.GET('/api/v1/auth/me')), staleTime: 60_000, retry: false }),
};
