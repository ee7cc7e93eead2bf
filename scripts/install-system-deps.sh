#!/usr/bin/env bash
# Installs the Debian packages the test suite talks to (real rauc, OpenSSL, a
# D-Bus daemon for rauc's service, an OCI registry, Chromium, wrk, podman with runc
# and a static busybox for the container images the tests build, journald's
# file writer for log bundles, dpkg-deb for the agent package, libfaketime for
# the certificate renewal test's shared clock, poppler's pdftotext and pdftoppm for
# the PDF tests, HAProxy for the multi-process device-channel test, SoftHSM2 and
# OpenSC's pkcs11-tool for the key-encryption-key token, zstd for delta updates), and seeds node-gyp with the
# running Node's headers. Idempotent:
# packages already present are not touched, so a warm machine pays nothing.
set -euo pipefail

# node-gyp builds the optional native package pkcs11js (the PKCS#11 KEK) against Node's headers
# and would download them from nodejs.org, which a closed network refuses; pnpm passes no
# `nodedir` to it. Where the running Node ships its headers (include/node under its prefix, as
# Debian's nodejs and the official tarballs do), they are placed where node-gyp looks first.
node_prefix="$(node -p 'require("path").resolve(process.execPath, "../..")')"
node_version="$(node -p 'process.versions.node')"
gyp_dir="${XDG_CACHE_HOME:-$HOME/.cache}/node-gyp/$node_version"
if [ -f "$node_prefix/include/node/node_version.h" ] && [ ! -f "$gyp_dir/include/node/node_version.h" ]; then
  mkdir -p "$gyp_dir/include"
  cp -r "$node_prefix/include/node" "$gyp_dir/include/"
  # node-gyp 12's layout version; it rereads headers only when this is lower than its own
  echo 11 > "$gyp_dir/installVersion"
  echo "node-gyp: Node $node_version headers taken from $node_prefix/include/node"
fi

want=(openssl softhsm2 opensc rauc squashfs-tools e2fsprogs dbus docker-registry chromium wrk podman runc busybox-static systemd-journal-remote dpkg faketime poppler-utils haproxy iproute2 zstd)
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "system packages: all present (${want[*]})"
  exit 0
fi
echo "system packages: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# docker-registry starts a system service on :5000 when installed; tests start their own.
$SUDO systemctl stop docker-registry >/dev/null 2>&1 || true
# systemd-journal-remote's socket likewise; tests write journal files with the binary only.
$SUDO systemctl stop systemd-journal-remote.socket >/dev/null 2>&1 || true
echo "system packages: installed ${missing[*]}"
