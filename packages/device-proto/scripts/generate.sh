#!/usr/bin/env bash
# Regenerates src/__generated__ from ../../proto (or into $1 when given, for the
# "generated code is current" test). buf bundles google/protobuf/*.proto itself.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-src/__generated__}"
if [ "$out" = "src/__generated__" ]; then rm -rf src/__generated__; fi
./node_modules/.bin/buf generate --template buf.gen.yaml -o "$out.__tmp" 2>&1 || { rm -rf "$out.__tmp"; exit 1; }
mkdir -p "$out"
cp -R "$out.__tmp/src/__generated__/." "$out/"
rm -rf "$out.__tmp"
