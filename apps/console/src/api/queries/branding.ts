import { queryOptions } from '@tanstack/react-query';
import { api, ok } from '../client';

/** The tenant's report branding (`GET /admin/branding`), also shown in the header. */
export const brandingQueries = {
  current: () => queryOptions({ queryKey: ['branding'] as const, queryFn: () => ok(api.GET('/api/v1/admin/branding')) }),
};
