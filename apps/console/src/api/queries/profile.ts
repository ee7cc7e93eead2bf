import { queryOptions } from '@tanstack/react-query';
import { api, ok } from '../client';

/** The caller's own profile (`GET /profile`). */
export const profileQueries = {
  mine: () => queryOptions({ queryKey: ['profile'] as const, queryFn: () => ok(api.GET('/api/v1/profile')) }),
};
