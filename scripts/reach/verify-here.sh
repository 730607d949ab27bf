#!/usr/bin/env bash
# The reach suite on this system as it is, without a root of its own: for the workflow's jobs that
# run on the target itself (an Alpine container: the musl prebuild; an arm64 runner). The package
# is staged in .cache/reach/here as its tarball installs it, and run by this machine's `node`.
# Needs dist/ and prebuilds/linux-ARCH; the suite's summary counts.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/reach/stage.sh
arch=$(node -p process.arch)
require_built "$arch"
cache=${REAPKIT_REACH_CACHE:-$PWD/.cache/reach}
glibc=$(node -p "process.report.getReport().header.glibcVersionRuntime || ''")
libc=glibc
[ -n "$glibc" ] || libc=musl
app=$cache/here
tarball=$(stage_package "$app" "$cache")
echo "== reach here: $tarball, linux-$arch $libc${glibc:+ $glibc}, Node $(node --version)"
REAPKIT_REACH_ROOT=/ REAPKIT_REACH_ARCH=$arch REAPKIT_REACH_LIBC=$libc REAPKIT_REACH_GLIBC=$glibc \
  REAPKIT_REACH_APP=$app REAPKIT_REACH_NODE=$(command -v node) \
  exec npx vitest run --config vitest.reach.config.mts --reporter=verbose
