import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createBrowserRouter, RouterProvider } from 'react-router';
import { ApiError } from './api/client';
import { routes } from './routes';
import './styles.css';

const router = createBrowserRouter(routes);

/** A 401 anywhere: back to login, then to this page afterwards. */
function onError(error: unknown) {
  if (!(error instanceof ApiError) || error.status !== 401) return;
  const here = `${window.location.pathname}${window.location.search}`;
  if (window.location.pathname === '/login') return;
  queryClient.clear();
  void router.navigate(`/login?next=${encodeURIComponent(here)}`, { replace: true });
}

const queryClient = new QueryClient({
  queryCache: new QueryCache({ onError }),
  mutationCache: new MutationCache({ onError }),
  defaultOptions: {
    queries: { retry: (n, e) => !(e instanceof ApiError) && n < 2, staleTime: 5_000, refetchOnWindowFocus: false },
  },
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
