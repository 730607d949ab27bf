#!/usr/bin/env bash
# What `npm run prebuild` needs from Debian on a linux-x64 machine, installed where missing: the
# arm64 cross gcc and its C library (the static arm64 helpers), and musl-tools (whose libc.so
# test/prebuilds.test.ts checks the musl addons' symbols against). Zig comes from the npm registry
# on first use (scripts/prebuild/zig.mjs). Needs root to install; does nothing when all is there.
set -euo pipefail
missing=()
command -v gcc >/dev/null || missing+=(gcc libc6-dev)
command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu)
[ -f /usr/aarch64-linux-gnu/lib/libc.a ] || missing+=(libc6-dev-arm64-cross)
[ -f /lib/x86_64-linux-musl/libc.so ] || missing+=(musl-tools)
command -v readelf >/dev/null || missing+=(binutils)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== prebuild setup: installing from Debian: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
