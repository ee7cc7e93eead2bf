#!/usr/bin/env bash
# Runs the type check of every package with its tests (tsc, turbo run typecheck), the linters
# (ESLint with type information and the project's comment rules, Prettier), then every
# package's tests through turbo (builds first), then prints one closing line
# "tests: N passed, N failed, N skipped" summed over all packages. A type or lint failure fails the run.
set -u
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
rm -rf .vitest-reports
pnpm exec turbo run build --output-logs=errors-only
lint=0
if pnpm exec turbo run typecheck --output-logs=errors-only && pnpm exec eslint . && pnpm exec prettier --check . --log-level warn; then
  echo "lint: ok"
else
  echo "lint: FAILED (pnpm typecheck and pnpm lint show every finding; pnpm format fixes the formatting)"
  lint=1
fi
pnpm exec turbo run test --continue --concurrency=2 --output-logs=full "$@"
rc=$?
node scripts/test-summary.mjs || rc=1
[ "$lint" -eq 0 ] || rc=1
exit $rc
