import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The compiled module `relative` to `base` (the caller's `import.meta.url`), for what runs in a
 * thread or a child process of its own. Run from the sources (tests under vitest), that is the
 * built one in dist/; `what` names it when neither exists.
 */
export function builtFile(relative: string, base: string, what: string): URL {
  const here = new URL(relative, base);
  if (existsSync(fileURLToPath(here))) return here;
  const built = new URL(here.href.replace('/src/', '/dist/'));
  if (existsSync(fileURLToPath(built))) return built;
  throw new Error(`${what}: ${fileURLToPath(here)} not found (build the server: pnpm --filter @svc/server build)`);
}
