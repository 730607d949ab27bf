#!/usr/bin/env bash
# Installs reapkit as a Windows user gets it: the win32 prebuild (build-win32/, from
# scripts/win32/build.sh) goes into prebuilds/win32-x64/ as prepack puts it there, the package is
# packed (npm pack, scripts skipped: dist/ is already built) and the tarball is unpacked into
# .cache/win32/stage/node_modules/reapkit, with node-gyp-build (its one dependency) beside it. So
# node.exe under Wine loads the Windows prebuild from the tarball, never the Linux build/.
# Needs dist/ (npm run build:ts) and build-win32/ (scripts/win32/build.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/win32/env.sh
mkdir -p prebuilds/win32-x64
cp build-win32/reapkit.node build-win32/reapkit-job.exe prebuilds/win32-x64/
packs="$REAPKIT_WIN32_CACHE/packs"
rm -rf "$packs"
mkdir -p "$packs"
tarball=$(npm pack --ignore-scripts --silent --pack-destination "$packs" | tail -n 1)
stage="$REAPKIT_WIN32_CACHE/stage/node_modules"
rm -rf "$stage"
mkdir -p "$stage/reapkit"
tar -xzf "$packs/$tarball" -C "$stage/reapkit" --strip-components=1
cp -r node_modules/node-gyp-build "$stage/"
test -f "$stage/reapkit/prebuilds/win32-x64/reapkit.node" && test -f "$stage/reapkit/prebuilds/win32-x64/reapkit-job.exe"
echo "== win32 stage: $stage/reapkit (from $tarball)"
