import { resolve } from 'node:path';

/** The repository root (this file sits in apps/e2e/src or apps/e2e/dist). */
export const REPO_ROOT = resolve(import.meta.dirname, '..', '..', '..');
/** What `pnpm start` runs. */
export const SERVER_MAIN = resolve(REPO_ROOT, 'apps/server/dist/main.js');
/** The device agent process (`svc-agent`). */
export const AGENT_MAIN = resolve(REPO_ROOT, 'apps/agent/dist/main.js');
/** Preloaded into an agent by the crash table (`--import`): kills it at a named crash point. */
export const CRASH_HOOK = resolve(REPO_ROOT, 'apps/e2e/dist/crash-hook.js');
/** The fleet simulator (`pnpm sim`): many simulated devices in one process. */
export const SIM_MAIN = resolve(REPO_ROOT, 'apps/agent/dist/sim/main.js');
/** `svc-release` (oclif entry). */
export const CLI_BIN = resolve(REPO_ROOT, 'apps/cli/bin/run.js');
