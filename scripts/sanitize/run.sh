#!/usr/bin/env bash
# npm run test:sanitize: the addon and both C helpers built with AddressSanitizer and
# UndefinedBehaviorSanitizer (cmake-js, -DREAPKIT_SANITIZE=ON, into build-sanitize/), and the
# native-facing tests (vitest.sanitize.config.mts) run against that build.
#
# - Node is not instrumented, so the ASan runtime is preloaded (LD_PRELOAD) into the test processes
#   and the Node fixtures they start; REAPKIT_ADDON points the loader at the sanitized addon, whose
#   helpers (reapkit-exec, reapkit-supervise) are taken from beside it.
# - procps' `ps` hangs with libasan preloaded: a `ps` on PATH ahead of the real one drops the
#   preload for it alone.
# - The `reapkit` command runs the sanitized supervisor (REAPKIT_SUPERVISOR, which bin/reapkit honours).
# - Leak detection is off: Node does not free its heap at exit, so every run would "leak". Any ASan
#   report or undefined behaviour aborts the process it happens in, and the test that started it
#   fails.
set -euo pipefail
cd "$(dirname "$0")/../.."

asan=$(gcc -print-file-name=libasan.so)
asan=$(realpath "$asan")
[ -f "$asan" ] || { echo "test:sanitize: no libasan.so from gcc ($asan)" >&2; exit 1; }

echo "== sanitizer build (ASan + UBSan) into build-sanitize/"
npx cmake-js rebuild --out build-sanitize --CDREAPKIT_SANITIZE=ON > build-sanitize.log 2>&1 || {
  tail -40 build-sanitize.log >&2
  exit 1
}
rm -f build-sanitize.log
addon="$PWD/build-sanitize/Release/reapkit.node"

shims=$(mktemp -d)
trap 'rm -rf "$shims"' EXIT
real_ps=$(command -v ps)
printf '#!/bin/sh\nunset LD_PRELOAD\nexec %s "$@"\n' "$real_ps" > "$shims/ps"
chmod +x "$shims/ps"

# The run must really be the sanitized one: the runtime mapped into Node, the addon loaded from
# build-sanitize/, and its exec helper beside it.
LD_PRELOAD="$asan" ASAN_OPTIONS=detect_leaks=0 REAPKIT_ADDON="$addon" node -e '
  const rk = require("./dist/cjs/index.js")
  const native = rk.capabilities().native // the addon loads on its first use, not at require
  const maps = require("fs").readFileSync("/proc/self/maps", "utf8")
  const ok = maps.includes("libasan") && maps.includes(process.env.REAPKIT_ADDON) && native
  if (!ok) { console.error("test:sanitize: the sanitized addon or the ASan runtime is not loaded"); process.exit(1) }
'

echo "== native-facing tests under the sanitizers (addon: $addon)"
PATH="$shims:$PATH" \
  REAPKIT_SANITIZE=1 \
  REAPKIT_ADDON="$addon" \
  REAPKIT_SUPERVISOR="$PWD/build-sanitize/Release/helper/reapkit-supervise" \
  LD_PRELOAD="$asan" \
  ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allow_user_segv_handler=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  npx vitest run --config vitest.sanitize.config.mts "$@"
