import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// @svc/release-core resolves through its `browser` export condition (which vite applies when
// building for the browser): its browser entry and default crypto provider are the pure-TypeScript
// noble ones, so nothing here loads node:crypto.

// `pnpm --filter @svc/console dev`: hot reload on :5173, the API proxied to a running server
// (`pnpm start`, or SVC_CONSOLE_API=http://host:port), so the page and /api/v1 share one origin.
export default defineConfig({
  plugins: [react()],
  server: {
    port: 5173,
    strictPort: false,
    proxy: { '/api': { target: process.env.SVC_CONSOLE_API ?? 'http://127.0.0.1:8080', changeOrigin: false } },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    chunkSizeWarningLimit: 600,
  },
});
