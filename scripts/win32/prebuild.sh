#!/usr/bin/env bash
# prebuilds/win32-x64/ (reapkit.node, reapkit-job.exe): the Windows prebuild the packed tarball
# carries, cross-built here with mingw-w64 (scripts/win32/build.sh). `npm run prebuild:all` (and
# so prepack) runs this after the Linux prebuilds. Without the cross compiler, an existing
# prebuilds/win32-x64 (the GitHub workflow's, built with MSVC on windows-latest) is kept; with
# neither it fails, and scripts/prebuild/check.mjs then names win32-x64 as missing: a package whose
# `os` says win32 must carry a Windows prebuild. REAPKIT_PREBUILD_WIN32=skip leaves it out, saying
# so (the Linux tarball test does, on machines without the cross compiler; test:win32 packs its own).
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=prebuilds/win32-x64
if [ "${REAPKIT_PREBUILD_WIN32:-}" = skip ]; then
  echo "== win32 prebuild: skipped (REAPKIT_PREBUILD_WIN32=skip): this tarball has no Windows prebuild" >&2
  exit 0
fi
if command -v x86_64-w64-mingw32-g++ >/dev/null 2>&1 && [ -d node_modules/node-api-headers ]; then
  bash scripts/win32/build.sh
  mkdir -p "$dest"
  cp build-win32/reapkit.node build-win32/reapkit-job.exe "$dest/"
  echo "== win32 prebuild: $dest (mingw-w64)"
elif [ -f "$dest/reapkit.node" ] && [ -f "$dest/reapkit-job.exe" ]; then
  echo "== win32 prebuild: keeping $dest (no mingw-w64 here)"
else
  echo "prebuild (win32): no $dest and no mingw-w64 to build it (apt-get install g++-mingw-w64-x86-64," >&2
  echo "or let the GitHub workflow's windows job provide it)" >&2
  exit 1
fi
