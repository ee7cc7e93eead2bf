import { useQuery } from '@tanstack/react-query';
import type { Schema } from './client';
import { sessionQueries } from './queries/session';

export type Me = Schema<'/api/v1/auth/me', 'get'>;
export type Permission = Me['permissions'][number];

/** Who is logged in (`GET /auth/me`); a 401 sends the router to the login page. */
export function useMe() {
  return useQuery(sessionQueries.me());
}

/** Whether the caller's role has `permission`, and if not, the reason in words. */
export function useCan(permission: Permission): { ok: boolean; reason: string } {
  const me = useMe().data;
  if (me === undefined) return { ok: false, reason: 'loading your permissions' };
  if (me.permissions.includes(permission)) return { ok: true, reason: '' };
  return { ok: false, reason: `Your role (${me.role}) lacks the permission ${permission}.` };
}
