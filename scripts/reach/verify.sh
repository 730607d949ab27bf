#!/usr/bin/env bash
# Runs the reach suite (test/reach/, vitest.reach.config.mts) against the linux-ARCH prebuild where
# it will run rather than where it was built: in a Debian 11 (bullseye, glibc 2.31) root made by
# debootstrap, under Node 20 from the npm registry (node-linux-ARCH), with the package staged as its
# tarball installs it. For arm64 the root is an arm64 one and every process in it runs under
# qemu-user (binfmt_misc with qemu-user-static's fix-binary flag, so the chroot needs no qemu).
#
#   bash scripts/reach/verify.sh x64|arm64        (verify-bullseye.sh and verify-arm64.sh call it)
#
# Needs root (debootstrap, chroot, a mount namespace per process), dist/ (npm run build:ts) and
# prebuilds/linux-ARCH (npm run prebuild). Downloads only from Debian's mirror and the npm registry,
# into .cache/reach/ (REAPKIT_REACH_CACHE): the roots and the Node binaries are reused by the next
# run, so only the first one pays for them. Prints each step's time; vitest's summary counts.
set -euo pipefail
cd "$(dirname "$0")/../.."
arch=${1:-}
case $arch in
  x64) deb=amd64 ;;
  arm64) deb=arm64 ;;
  *) echo "usage: $0 x64|arm64" >&2; exit 2 ;;
esac
cache=${REAPKIT_REACH_CACHE:-$PWD/.cache/reach}
mirror=${REAPKIT_DEBIAN_MIRROR:-} # empty: debootstrap's own default mirror
suite=bullseye glibc=2.31
step() { echo "== reach linux-$arch: $1 ($((SECONDS - t)) s)"; t=$SECONDS; }
t=$SECONDS
started=$SECONDS

if [ "$(id -u)" != 0 ]; then
  echo "reach: needs root (debootstrap, chroot, a mount namespace per process); nothing was run" >&2
  exit 1
fi
. scripts/reach/stage.sh
require_built "$arch"
case $(uname -m) in x86_64) host=x64 ;; aarch64) host=arm64 ;; *) host=$(uname -m) ;; esac

# Tools from Debian where missing.
missing=()
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v unshare >/dev/null || missing+=(util-linux)
if [ "$arch" != "$host" ]; then
  command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static)
  command -v update-binfmts >/dev/null || missing+=(binfmt-support)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  step "installed ${missing[*]} from Debian"
fi

emulator=
if [ "$arch" != "$host" ]; then
  [ "$arch" = arm64 ] || { echo "reach: linux-$arch on a $host machine is not set up here" >&2; exit 1; }
  # arm64 executables run through qemu-aarch64-static, registered with the kernel; the F flag opens
  # the interpreter now, so it is found from inside the chroot too.
  [ -e /proc/sys/fs/binfmt_misc/status ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
  entry=/proc/sys/fs/binfmt_misc/qemu-aarch64
  if ! grep -qx enabled "$entry" 2>/dev/null || ! grep -q '^flags: .*F' "$entry"; then
    echo "reach: could not register qemu-aarch64 with binfmt_misc (fix-binary): $(cat "$entry" 2>&1 | tr '\n' ' ')" >&2
    exit 1
  fi
  emulator="qemu-user $(qemu-aarch64-static --version | sed -n 's/^qemu-aarch64 version \([0-9.]*\).*/\1/p')"
fi

root=$cache/roots/$suite-$deb
if [ ! -f "$root/.reapkit-root" ]; then
  rm -rf "$root" "$root.tmp"
  mkdir -p "$cache/roots"
  debootstrap --variant=minbase --arch "$deb" "$suite" "$root.tmp" ${mirror:+"$mirror"} >"$cache/roots/$suite-$deb.log" 2>&1 ||
    { tail -20 "$cache/roots/$suite-$deb.log" >&2; exit 1; }
  touch "$root.tmp/.reapkit-root"
  mv "$root.tmp" "$root"
  step "debootstrap $suite $deb (minbase) into $root"
else
  step "$suite $deb root from the cache"
fi

# Node 20 for this arch from the npm registry (--force: its os/cpu fields refuse another machine).
nodes=$cache/node-$arch # one folder per arch: npm prunes what a --no-save install did not name
node_bin=$nodes/node_modules/node-$arch/bin/node
if [ ! -x "$node_bin" ]; then
  mkdir -p "$nodes"
  [ -f "$nodes/package.json" ] || echo '{"private":true}' >"$nodes/package.json"
  (cd "$nodes" && npm install --silent --no-audit --no-fund --no-save --force "node-$arch@npm:node-linux-$arch@20" >/dev/null 2>&1)
  step "node-linux-$arch@20 from the npm registry"
fi
mkdir -p "$root/opt/node/bin"
cmp -s "$node_bin" "$root/opt/node/bin/node" || cp "$node_bin" "$root/opt/node/bin/node"

tarball=$(stage_package "$root/opt/reach" "$cache")
step "staged $tarball and Node $(node -p "require('$nodes/node_modules/node-$arch/package.json').version") in the root"

rc=0
REAPKIT_REACH_ROOT=$root REAPKIT_REACH_ARCH=$arch REAPKIT_REACH_GLIBC=$glibc REAPKIT_REACH_EMULATOR=$emulator \
  npx vitest run --config vitest.reach.config.mts --reporter=verbose || rc=$?
step "the reach suite${emulator:+ under $emulator}"
echo "== reach linux-$arch: $((SECONDS - started)) s in all, exit $rc"
exit "$rc"
