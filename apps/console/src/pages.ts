/** Every list page with its heading (path, h1): the Chromium tests visit each of them. */
export const PAGES = [
  ['/', 'Fleet'],
  ['/devices', 'Devices'],
  ['/enroll-tokens', 'Enrollment tokens'],
  ['/artifacts', 'Artifacts'],
  ['/registries', 'Registries'],
  ['/releases', 'Releases'],
  ['/groups', 'Groups'],
  ['/rollouts', 'Rollouts'],
  ['/transactions', 'Release transactions'],
  ['/receipts', 'Receipts'],
  ['/profile', 'Profile'],
  ['/admin/users', 'Users'],
  ['/admin/api-keys', 'API keys'],
  ['/admin/authorizer-keys', 'Authorizer keys'],
  ['/admin/branding', 'Report branding'],
  ['/admin/audit', 'Audit trail'],
] as const;
