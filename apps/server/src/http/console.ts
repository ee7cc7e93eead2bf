/**
 * The web console (apps/console's build) at `/`, from the same origin as `/api/v1`, so the
 * httpOnly session cookie is the only credential the browser needs.
 *
 * - Every file of the build is read once at start and kept in memory with its brotli and gzip
 *   forms, which the console's build writes beside each file (`x.js.br`, `x.js.gz`; compressing
 *   at start would cost seconds); a request never touches the file system, so no path can
 *   escape the directory. A file without them is gzipped at start (fast), never brotli'd.
 * - `/assets/*` are content-hashed by the bundler: cached for a year, immutable. Everything
 *   else (`index.html`) is revalidated on every load (`no-cache` + ETag).
 * - Any other GET outside `/api/` is a client route: it answers `index.html`. `/api/*` paths
 *   that match no route keep the API's JSON 404; a missing asset is a plain 404.
 * - A strict Content-Security-Policy: scripts and styles only from this origin, no inline
 *   script, no framing, connections only to this origin.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  // the branding logo is stored and previewed as a data: URL
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
} as const;

const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.json', '.svg', '.txt', '.map']);

interface ConsoleFile {
  type: string;
  etag: string;
  cacheControl: string;
  identity: Buffer;
  gzip?: Buffer;
  br?: Buffer;
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    return e.isDirectory() ? listFiles(path) : e.isFile() ? [path] : [];
  });
}

/** Reads the build into memory: URL path -> bytes, precompressed forms, headers. */
export function loadConsole(dir: string): Map<string, ConsoleFile> {
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new Error(`console build not found at ${dir}`);
  const files = new Map<string, ConsoleFile>();
  const paths = new Set(listFiles(dir));
  const sibling = (path: string) => (paths.has(path) ? readFileSync(path) : undefined);
  for (const path of paths) {
    const ext = extname(path);
    // the precompressed forms are served for their file, not at their own URL
    if ((ext === '.br' || ext === '.gz') && paths.has(path.slice(0, -ext.length))) continue;
    const url = `/${relative(dir, path).split(sep).join('/')}`;
    const identity = readFileSync(path);
    const file: ConsoleFile = {
      type: TYPES[ext] ?? 'application/octet-stream',
      etag: `"${createHash('sha256').update(identity).digest('base64url').slice(0, 22)}"`,
      cacheControl: url.startsWith('/assets/') ? IMMUTABLE : REVALIDATE,
      identity,
    };
    if (COMPRESSIBLE.has(ext) && identity.length > 512) {
      const br = sibling(`${path}.br`);
      if (br !== undefined) file.br = br;
      file.gzip = sibling(`${path}.gz`) ?? gzipSync(identity, { level: 6 });
    }
    files.set(url, file);
  }
  if (!files.has('/index.html')) throw new Error(`console build at ${dir} has no index.html`);
  return files;
}

function send(request: FastifyRequest, reply: FastifyReply, file: ConsoleFile): FastifyReply {
  void reply.headers(SECURITY_HEADERS).header('cache-control', file.cacheControl).header('etag', file.etag).header('vary', 'accept-encoding');
  if (request.headers['if-none-match'] === file.etag) return reply.code(304).send();
  const accepts = String(request.headers['accept-encoding'] ?? '');
  let body = file.identity;
  if (file.br !== undefined && /\bbr\b/.test(accepts)) {
    body = file.br;
    void reply.header('content-encoding', 'br');
  } else if (file.gzip !== undefined && /\bgzip\b/.test(accepts)) {
    body = file.gzip;
    void reply.header('content-encoding', 'gzip');
  }
  return reply.type(file.type).send(body);
}

/** Registers `GET /` and `GET /*` (HEAD too) serving the console build found in `dir`. */
export async function consoleRoutes(app: FastifyInstance, opts: { dir: string }): Promise<void> {
  const files = loadConsole(opts.dir);
  const index = files.get('/index.html')!;
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]!;
    // unknown API paths keep the API's JSON 404
    if (path === '/api' || path.startsWith('/api/')) return reply.callNotFound();
    let decoded: string;
    try {
      decoded = decodeURIComponent(path);
    } catch {
      return reply.callNotFound();
    }
    const file = files.get(decoded);
    if (file !== undefined) return send(request, reply, file);
    if (decoded.startsWith('/assets/')) return reply.callNotFound();
    return send(request, reply, index);
  };
  // permission 'public': the console is static code; every datum it shows comes from /api/v1.
  app.get('/', { config: { permission: 'public' } }, handler);
  app.get('/*', { config: { permission: 'public' } }, handler);
}

/** The console build of this checkout (apps/console/dist), or undefined when it was not built. */
export function builtConsoleDir(): string | undefined {
  const dir = fileURLToPath(new URL('../../../console/dist', import.meta.url));
  return statSync(join(dir, 'index.html'), { throwIfNoEntry: false })?.isFile() ? dir : undefined;
}
