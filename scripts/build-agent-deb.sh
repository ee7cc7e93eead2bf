#!/usr/bin/env bash
# Builds the agent's Debian package: scripts/build-agent-deb.sh [OUT_DIR] (default dist/deb).
# The agent bundled into one file with esbuild (Node >= 20, no node_modules on the device),
# the hardened systemd unit, /etc/svc-agent/agent.env, and svc-agent-enroll; Architecture
# all, Depends nodejs (>= 20). Prints the path of the .deb on its last line.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "${1:-$root/dist/deb}" && cd "${1:-$root/dist/deb}" && pwd)"
agent="$root/apps/agent"
pkg="$agent/packaging"
version="$(node -p "require('$agent/package.json').version")"
stage="$(mktemp -d)"
chmod 0755 "$stage"
trap 'rm -rf "$stage"' EXIT

# the workspace packages the agent imports are bundled from their dist/
(cd "$root" && TURBO_TELEMETRY_DISABLED=1 pnpm exec turbo run build --filter=@svc/agent... --output-logs=errors-only >&2)

install -d "$stage/DEBIAN" "$stage/usr/lib/svc-agent" "$stage/usr/bin" "$stage/usr/sbin" \
  "$stage/lib/systemd/system" "$stage/etc/svc-agent/trust.d" "$stage/usr/share/doc/svc-agent"
# ESM output; the CommonJS dependencies (grpc-js, tuf-js) get a real `require`
(cd "$agent" && pnpm exec esbuild src/main.ts --bundle --platform=node --target=node20 --format=esm \
  --outfile="$stage/usr/lib/svc-agent/svc-agent.mjs" --log-level=warning \
  "--banner:js=import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);")
chmod 0755 "$stage/usr/lib/svc-agent/svc-agent.mjs"
ln -s ../lib/svc-agent/svc-agent.mjs "$stage/usr/bin/svc-agent"
install -m 0755 "$pkg/svc-agent-enroll" "$stage/usr/sbin/svc-agent-enroll"
install -m 0644 "$pkg/svc-agent.service" "$stage/lib/systemd/system/svc-agent.service"
install -m 0644 "$pkg/agent.env" "$stage/etc/svc-agent/agent.env"
install -m 0644 "$root/docs/agent.md" "$stage/usr/share/doc/svc-agent/agent.md"
printf 'svc-agent: the svc fleet device agent.\nLicense: Apache-2.0\n' > "$stage/usr/share/doc/svc-agent/copyright"
for script in postinst prerm postrm; do install -m 0755 "$pkg/$script" "$stage/DEBIAN/$script"; done
echo /etc/svc-agent/agent.env > "$stage/DEBIAN/conffiles"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: svc-agent
Version: $version
Architecture: all
Depends: nodejs (>= 20)
Recommends: podman
Suggests: rauc
Section: admin
Priority: optional
Maintainer: svc fleet maintainers <maintainers@svc.invalid>
Installed-Size: $(du -sk "$stage" | cut -f1)
Description: svc fleet device agent
 Verifies customer-signed releases, stages and activates them group by group
 with health checks, rolls back on failure and uploads signed receipts over
 an mTLS channel. Also answers log requests and renews its certificate.
CONTROL
deb="$out/svc-agent_${version}_all.deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >&2
echo "$deb"
