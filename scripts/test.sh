#!/usr/bin/env bash
# Runs the linters (ESLint with type information and the project's comment rules, Prettier),
# then every package's tests through turbo (builds first), then prints one closing line
# "tests: N passed, N failed, N skipped" summed over all packages. A lint failure fails the run.
set -u
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
rm -rf .vitest-reports
pnpm exec turbo run build --output-logs=errors-only
lint=0
if pnpm exec eslint . && pnpm exec prettier --check . --log-level warn; then
  echo "lint: ok"
else
  echo "lint: FAILED (pnpm lint shows every finding; pnpm format fixes the formatting)"
  lint=1
fi
pnpm exec turbo run test --continue --concurrency=2 --output-logs=full "$@"
rc=$?
node scripts/test-summary.mjs || rc=1
[ "$lint" -eq 0 ] || rc=1
exit $rc
