#!/usr/bin/env bash
# Runs every package's tests through turbo (builds first), then prints one
# closing line "tests: N passed, N failed, N skipped" summed over all packages.
set -u
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
rm -rf .vitest-reports
pnpm exec turbo run test --continue --concurrency=2 --output-logs=full "$@"
rc=$?
node scripts/test-summary.mjs || rc=1
exit $rc
