#!/usr/bin/env bash
# Runs the type check of every package with its tests (tsc, turbo run typecheck), the linters
# (ESLint with type information and the project's comment rules, Prettier), then every
# package's tests through turbo (builds first), then prints the ten slowest test files and one
# closing line "tests: N passed, N failed, N skipped" summed over all packages. A type or lint
# failure fails the run.
#
# The suite is scheduled for a 2-core machine (docs/development.md, "The test run"): the light
# packages first, two at a time; then the server alone (its workers fill both cores); then the
# end-to-end tests beside the console's (each runs one file at a time and keeps about half the
# machine busy). Arguments (e.g. --filter=@svc/agent) run one turbo invocation with them instead.
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
tests() { pnpm exec turbo run test --continue --output-logs=full "$@"; }
rc=0
if [ "$#" -gt 0 ]; then
  tests --concurrency=1 "$@" || rc=1
else
  tests --concurrency=2 --filter=@svc/release-core --filter=@svc/device-proto --filter=@svc/test-kit --filter=@svc/cli --filter=@svc/agent || rc=1
  tests --concurrency=1 --filter=@svc/server || rc=1
  tests --concurrency=2 --filter=@svc/e2e --filter=@svc/console || rc=1
fi
node scripts/test-summary.mjs || rc=1
[ "$lint" -eq 0 ] || rc=1
exit $rc
