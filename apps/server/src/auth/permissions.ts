/**
 * THE permission names and the role -> permission map (spec §5 rule 4, 5.5). Every route names
 * one of these in `config.permission`; route modules import from here, never retype a
 * string. Reads need `<area>.read`; state changes need `<area>.write` or `.manage`.
 */
export const PERMISSIONS = [
  'devices.read',
  'devices.write',
  'enroll-tokens.read',
  'enroll-tokens.write',
  'artifacts.read',
  'artifacts.write',
  'registries.read',
  'registries.write',
  'groups.read',
  'groups.write',
  'rollouts.read',
  'rollouts.write',
  'releases.read',
  'releases.write',
  'receipts.read',
  'keys.read',
  'keys.write',
  'evidence.read',
  'evidence.write',
  'audit.read',
  'branding.read',
  'profile.read',
  'profile.write',
  'users.manage',
  'api-keys.manage',
  'admin.manage',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

export const ROLES = ['admin', 'operator', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** Route-level marker: `'public'` needs no credential (login); every other value needs one. */
export type RoutePermission = Permission | 'public';

const READS = PERMISSIONS.filter((p) => p.endsWith('.read'));
const SELF: Permission[] = ['profile.write'];
// Operators change the fleet but do not administer people, credentials or the tenant.
const ADMIN_ONLY: Permission[] = ['users.manage', 'api-keys.manage', 'admin.manage'];

export const ROLE_PERMISSIONS: Readonly<Record<Role, readonly Permission[]>> = {
  admin: [...PERMISSIONS],
  operator: PERMISSIONS.filter((p) => !ADMIN_ONLY.includes(p)),
  // spec §5 rule 4: a viewer-scoped credential can read but cannot change the fleet.
  viewer: [...READS, ...SELF],
};

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

export function isPermission(value: unknown): value is Permission {
  return typeof value === 'string' && (PERMISSIONS as readonly string[]).includes(value);
}

const SETS: Record<Role, ReadonlySet<Permission>> = {
  admin: new Set(ROLE_PERMISSIONS.admin),
  operator: new Set(ROLE_PERMISSIONS.operator),
  viewer: new Set(ROLE_PERMISSIONS.viewer),
};

export function permissionsOf(role: Role): ReadonlySet<Permission> {
  return SETS[role];
}
