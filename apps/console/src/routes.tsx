import type { ComponentType } from 'react';
import type { RouteObject } from 'react-router';
import { Layout } from './ui/layout';
import { Loading } from './ui/kit';
import { LoginPage } from './pages/login';
import { DashboardPage } from './pages/dashboard';
import { DevicesPage } from './pages/devices';
import { DevicePage } from './pages/device';
import { BulkJobPage } from './pages/device-bulk';
import { EnrollTokensPage } from './pages/enroll-tokens';
import { ArtifactsPage } from './pages/artifacts';
import { RegistriesPage } from './pages/registries';
import { ReleasesPage } from './pages/releases';
import { GroupsPage, GroupPage } from './pages/groups';
import { RolloutsPage } from './pages/rollouts';
import { RolloutPage } from './pages/rollout';
import { TransactionsPage, TransactionPage } from './pages/transactions';
import { ReceiptPage, ReceiptsPage } from './pages/receipts';
import { ProfilePage } from './pages/profile';
import { UsersPage } from './pages/admin/users';
import { ApiKeysPage } from './pages/admin/api-keys';
import { AuthorizerKeysPage } from './pages/admin/authorizer-keys';
import { BrandingPage } from './pages/admin/branding';
import { AuditPage } from './pages/admin/audit';
import { NotFoundPage } from './pages/not-found';

/** A compliance page from its own chunk (fetched on first visit; the first load stays small). */
const compliance = (page: keyof typeof import('./pages/compliance')) => async (): Promise<{ Component: ComponentType }> => {
  const pages = await import('./pages/compliance');
  return { Component: pages[page] };
};

export const routes: RouteObject[] = [
  { path: '/login', element: <LoginPage /> },
  {
    path: '/',
    element: <Layout />,
    hydrateFallbackElement: <Loading what="the console" />,
    children: [
      { index: true, element: <DashboardPage /> },
      { path: 'devices', element: <DevicesPage /> },
      { path: 'devices/:name', element: <DevicePage /> },
      { path: 'bulk-jobs/:id', element: <BulkJobPage /> },
      { path: 'enroll-tokens', element: <EnrollTokensPage /> },
      { path: 'artifacts', element: <ArtifactsPage /> },
      { path: 'registries', element: <RegistriesPage /> },
      { path: 'releases', element: <ReleasesPage /> },
      { path: 'groups', element: <GroupsPage /> },
      { path: 'groups/:id', element: <GroupPage /> },
      { path: 'rollouts', element: <RolloutsPage /> },
      { path: 'rollouts/:id', element: <RolloutPage /> },
      { path: 'transactions', element: <TransactionsPage /> },
      { path: 'transactions/:id', element: <TransactionPage /> },
      { path: 'receipts', element: <ReceiptsPage /> },
      { path: 'receipts/:id', element: <ReceiptPage /> },
      { path: 'findings', lazy: compliance('FindingsPage') },
      { path: 'vulnerabilities/:id', lazy: compliance('VulnerabilityPage') },
      { path: 'artifacts/:id/vex', lazy: compliance('VexPage') },
      { path: 'vuln-feeds', lazy: compliance('FeedsPage') },
      { path: 'cases', lazy: compliance('CasesPage') },
      { path: 'cases/:id', lazy: compliance('CasePage') },
      { path: 'reports', lazy: compliance('ReportsPage') },
      { path: 'profile', element: <ProfilePage /> },
      { path: 'admin/users', element: <UsersPage /> },
      { path: 'admin/api-keys', element: <ApiKeysPage /> },
      { path: 'admin/authorizer-keys', element: <AuthorizerKeysPage /> },
      { path: 'admin/branding', element: <BrandingPage /> },
      { path: 'admin/audit', element: <AuditPage /> },
      { path: '*', element: <NotFoundPage /> },
    ],
  },
];
