#!/usr/bin/env bash
# Cross-compiles the addon for win32-x64 with mingw-w64, from the same tree as the Linux build:
# the Windows sources are native/win/*.cc plus the shared native/errors.cc (native/addon.cc and the
# POSIX files are not compiled for Windows). node-addon-api's headers come from node_modules,
# node_api.h from node-api-headers, and node.exe's exports from an import library that dlltool
# makes from node-api-headers' node_api.def. Output: build-win32/reapkit.node (gitignored).
# Needs the toolchain from scripts/win32/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."

out=build-win32
mkdir -p "$out/obj"
napi_headers=$(node -p "require('path').dirname(require.resolve('node-api-headers/package.json'))")
addon_api=$(node -p "require('node-addon-api').include_dir")

# Import library for the N-API functions node.exe exports.
if [ ! -f "$out/libnode.a" ] || [ "$napi_headers/def/node_api.def" -nt "$out/libnode.a" ]; then
  x86_64-w64-mingw32-dlltool -d "$napi_headers/def/node_api.def" -l "$out/libnode.a" -D node.exe
fi

# The posix thread model: node-addon-api needs std::mutex, which gcc's win32 model lacks (gcc 12).
cxx=x86_64-w64-mingw32-g++-posix
command -v "$cxx" >/dev/null || cxx=x86_64-w64-mingw32-g++

# The same defines and warnings as binding.gyp's Linux build.
cxxflags=(-std=c++17 -O2 -fno-exceptions -Wall -Wextra -Wno-unused-parameter -Wno-cast-function-type
  -DNAPI_VERSION=8 -DNAPI_DISABLE_CPP_EXCEPTIONS -DNODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS
  -DNODE_ADDON_API_DISABLE_DEPRECATED -DUNICODE -D_UNICODE -D_WIN32_WINNT=0x0602
  -I"$napi_headers/include" -I"$addon_api")
sources=(native/errors.cc native/win/*.cc) # the launcher (job_launcher.c) is built below
objs=()
for src in "${sources[@]}"; do
  obj="$out/obj/$(basename "${src%.cc}").o"
  "$cxx" "${cxxflags[@]}" -c "$src" -o "$obj"
  objs+=("$obj")
done
# Fully static (libgcc, libstdc++, winpthread): the addon must load in a stock node.exe with no
# mingw DLLs beside it.
"$cxx" -shared -s -static -o "$out/reapkit.node" "${objs[@]}" \
  "$out/libnode.a" -Wl,--exclude-all-symbols
echo "== win32 build: $out/reapkit.node ($(stat -c %s "$out/reapkit.node") bytes)"

# reapkit-job.exe: runs a command in a kill-on-close job it owns, created suspended (job_launcher.c).
x86_64-w64-mingw32-gcc -std=c11 -O2 -Wall -Wextra -DUNICODE -D_UNICODE -s -static -o "$out/reapkit-job.exe" \
  native/win/job_launcher.c
echo "== win32 build: $out/reapkit-job.exe ($(stat -c %s "$out/reapkit-job.exe") bytes)"

# argv-dump.exe: for the tests only (test/win32/argv-dump.c), a stand-in for docker.exe and
# podman.exe that records the arguments it received. Not part of the package.
x86_64-w64-mingw32-gcc -std=c11 -O2 -Wall -Wextra -s -static -o "$out/argv-dump.exe" test/win32/argv-dump.c -lshell32
echo "== win32 build: $out/argv-dump.exe ($(stat -c %s "$out/argv-dump.exe") bytes)"
