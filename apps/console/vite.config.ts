import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

const here = dirname(fileURLToPath(import.meta.url));
const browserCrypto = resolve(here, 'src/verify/browser-crypto.ts');

/**
 * @svc/release-core takes its default crypto provider from `crypto/node.js` (node:crypto).
 * In the browser that module is replaced by one exporting the pure-TypeScript noble provider
 * under the same name (release-core's `crypto/default.ts` is the one import site meant for this).
 */
function releaseCoreInBrowser(): Plugin {
  return {
    name: 'svc-release-core-browser-crypto',
    enforce: 'pre',
    async resolveId(source, importer) {
      if (importer === undefined || !/release-core[\\/](dist|src)[\\/]/.test(importer)) return null;
      if (!/(^|\/)node\.js$/.test(source)) return null;
      const resolved = await this.resolve(source, importer, { skipSelf: true });
      return resolved !== null && /release-core[\\/](dist|src)[\\/]crypto[\\/]node\.(js|ts)$/.test(resolved.id) ? browserCrypto : null;
    },
  };
}

// `pnpm --filter @svc/console dev`: hot reload on :5173, the API proxied to a running server
// (`pnpm start`, or SVC_CONSOLE_API=http://host:port), so the page and /api/v1 share one origin.
export default defineConfig({
  plugins: [react(), releaseCoreInBrowser()],
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
