#!/usr/bin/env bash
# Lays out reapkit as a Windows user's install would have it (dist/, package.json, binding.gyp,
# prebuilds/win32-x64/reapkit.node, node-gyp-build beside it) in .cache/win32/stage/node_modules,
# so node.exe under Wine loads the Windows prebuild, never the Linux build/ of this checkout.
# Needs dist/ (npm run build:ts) and build-win32/reapkit.node (scripts/win32/build.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/win32/env.sh
stage="$REAPKIT_WIN32_CACHE/stage/node_modules"
rm -rf "$stage"
mkdir -p "$stage/reapkit/prebuilds/win32-x64"
cp -r package.json binding.gyp dist "$stage/reapkit/"
cp build-win32/reapkit.node build-win32/reapkit-job.exe "$stage/reapkit/prebuilds/win32-x64/"
cp -r node_modules/node-gyp-build "$stage/"
echo "== win32 stage: $stage/reapkit"
