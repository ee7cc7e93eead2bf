import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { NavLink, Navigate, Outlet, useLocation, useNavigate } from 'react-router';
import { api, ok } from '../api/client';
import { brandingQueries } from '../api/queries/branding';
import { useMe, type Permission } from '../api/session';
import { ErrorNote, Loading } from './kit';

const NAV: readonly { to: string; label: string; perm: Permission }[] = [
  { to: '/', label: 'Fleet', perm: 'devices.read' },
  { to: '/devices', label: 'Devices', perm: 'devices.read' },
  { to: '/enroll-tokens', label: 'Enrollment tokens', perm: 'enroll-tokens.read' },
  { to: '/artifacts', label: 'Artifacts', perm: 'artifacts.read' },
  { to: '/registries', label: 'Registries', perm: 'registries.read' },
  { to: '/releases', label: 'Releases', perm: 'releases.read' },
  { to: '/groups', label: 'Groups', perm: 'groups.read' },
  { to: '/rollouts', label: 'Rollouts', perm: 'rollouts.read' },
  { to: '/transactions', label: 'Transactions', perm: 'rollouts.read' },
  { to: '/receipts', label: 'Receipts', perm: 'receipts.read' },
];
const COMPLIANCE_NAV: readonly { to: string; label: string; perm: Permission }[] = [
  { to: '/findings', label: 'Findings', perm: 'evidence.read' },
  { to: '/cases', label: 'Article 14 cases', perm: 'evidence.read' },
  { to: '/vuln-feeds', label: 'Vulnerability feeds', perm: 'evidence.read' },
  { to: '/reports', label: 'Reports', perm: 'evidence.read' },
];
const ADMIN_NAV: readonly { to: string; label: string; perm: Permission }[] = [
  { to: '/admin/users', label: 'Users', perm: 'users.manage' },
  { to: '/admin/api-keys', label: 'API keys', perm: 'api-keys.manage' },
  { to: '/admin/authorizer-keys', label: 'Authorizer keys', perm: 'keys.read' },
  { to: '/admin/branding', label: 'Report branding', perm: 'branding.read' },
  { to: '/admin/audit', label: 'Audit trail', perm: 'audit.read' },
];

/** The frame of every logged-in page: skip link, header, navigation, main region. */
export function Layout() {
  const me = useMe();
  const location = useLocation();
  const navigate = useNavigate();
  const client = useQueryClient();
  const branding = useQuery({
    ...brandingQueries.current(),
    enabled: me.data?.permissions.includes('branding.read') ?? false,
    staleTime: 60_000,
  });
  const logout = useMutation({
    mutationFn: () => ok(api.POST('/api/v1/auth/logout')),
    onSuccess: () => {
      client.clear();
      void navigate('/login');
    },
  });
  if (me.isPending) return <Loading what="your session" />;
  if (me.isError) return <Navigate to={`/login?next=${encodeURIComponent(location.pathname + location.search)}`} replace />;
  const perms = new Set<string>(me.data.permissions);
  const link = (n: { to: string; label: string; perm: Permission }) => (
    <li key={n.to}>
      <NavLink to={n.to} end={n.to === '/'}>
        {n.label}
      </NavLink>
      {!perms.has(n.perm) && <span className="sr-only"> (no access)</span>}
    </li>
  );
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">
          {branding.data?.logo_data_url ? <img src={branding.data.logo_data_url} alt="" height={24} /> : null}
          {branding.data?.company_name || 'svc'} console
        </span>
        <span className="who">
          <NavLink to="/profile">{me.data.email ?? 'API key'}</NavLink> <span className="badge">{me.data.role}</span>{' '}
          <button type="button" onClick={() => logout.mutate()}>
            Log out
          </button>
        </span>
      </header>
      <nav className="side" aria-label="Main">
        <ul>{NAV.map(link)}</ul>
        <h2 className="nav-heading">Compliance</h2>
        <ul>{COMPLIANCE_NAV.map(link)}</ul>
        <h2 className="nav-heading">Administration</h2>
        <ul>{ADMIN_NAV.map(link)}</ul>
      </nav>
      <main id="main" tabIndex={-1}>
        <ErrorNote error={logout.error} />
        <Outlet />
      </main>
    </div>
  );
}
