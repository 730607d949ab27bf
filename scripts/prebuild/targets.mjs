// The prebuilds the package ships, one row per addon file, and what each needs beside it. The build
// (build.mjs), the completeness check (check.mjs), the test of the shipped files
// (test/prebuilds.test.ts) and package.json's os/cpu all follow this table.
//
// node-gyp-build picks the file: in prebuilds/<platform>-<arch>/ it takes a file tagged with the
// machine's libc over an untagged one (reapkit.musl.node on Alpine), and an untagged one where the
// tag does not match (reapkit.node on glibc). prebuildify's --tag-libc names files the same way.
// Both Linux addons of one arch share the folder, so they share its helpers: those are linked
// statically (the exec helper against musl, the native supervisor against glibc) and run on glibc and musl systems alike.

/** The oldest glibc the gnu builds load on: RHEL 8 / Rocky 8 (Debian 10 had 2.28 too). Node 20's own binary needs the same. */
export const GLIBC_BASELINE = '2.28'

/** The executables spawn() and the `reapkit` command need beside a POSIX addon (lib/ground/native.ts looks there). */
export const POSIX_HELPERS = ['reapkit-exec', 'reapkit-supervise']

/**
 * how: 'zig' (cross-built here by build.mjs), 'macos' (built natively on a macOS runner by
 * .github/workflows/prebuild.yml), 'mingw' (cross-built here by scripts/win32/prebuild.sh, or by
 * MSVC on the workflow's windows-latest runner).
 */
export const TARGETS = [
  { name: 'linux-x64-glibc', dir: 'linux-x64', addon: 'reapkit.node', os: 'linux', cpu: 'x64', libc: 'glibc', machine: 'x86-64', zig: `x86_64-linux-gnu.${GLIBC_BASELINE}`, how: 'zig' },
  { name: 'linux-x64-musl', dir: 'linux-x64', addon: 'reapkit.musl.node', os: 'linux', cpu: 'x64', libc: 'musl', machine: 'x86-64', zig: 'x86_64-linux-musl', how: 'zig' },
  { name: 'linux-arm64-glibc', dir: 'linux-arm64', addon: 'reapkit.node', os: 'linux', cpu: 'arm64', libc: 'glibc', machine: 'aarch64', zig: `aarch64-linux-gnu.${GLIBC_BASELINE}`, how: 'zig' },
  { name: 'linux-arm64-musl', dir: 'linux-arm64', addon: 'reapkit.musl.node', os: 'linux', cpu: 'arm64', libc: 'musl', machine: 'aarch64', zig: 'aarch64-linux-musl', how: 'zig' },
  { name: 'darwin-x64', dir: 'darwin-x64', addon: 'reapkit.node', os: 'darwin', cpu: 'x64', machine: 'x86-64', how: 'macos' },
  { name: 'darwin-arm64', dir: 'darwin-arm64', addon: 'reapkit.node', os: 'darwin', cpu: 'arm64', machine: 'aarch64', how: 'macos' },
  { name: 'win32-x64', dir: 'win32-x64', addon: 'reapkit.node', os: 'win32', cpu: 'x64', machine: 'x86-64', how: 'mingw' },
]

/** The helper executables shipped in a target's folder. */
export function helpersOf(target) {
  return target.os === 'win32' ? ['reapkit-job.exe'] : POSIX_HELPERS
}

/** Every file a target needs in prebuilds/<dir>/: its addon and the helpers beside it. */
export function filesOf(target) {
  return [target.addon, ...helpersOf(target)]
}

/** Where a missing target comes from, in words a maintainer can act on. */
export function howToGet(target) {
  switch (target.how) {
    case 'zig':
      return 'npm run prebuild on a linux-x64 machine (Zig from the npm registry, cached under .cache/prebuild)'
    case 'macos':
      return `built on macOS by .github/workflows/prebuild.yml (job ${target.dir}): put its artifact prebuild-${target.dir} in prebuilds/${target.dir}/, or run npm run prebuild on a Mac of that arch`
    case 'mingw':
      return 'apt-get install g++-mingw-w64-x86-64 and run npm run prebuild:win32, or put the workflow\'s prebuild-win32-x64 artifact (MSVC) in prebuilds/win32-x64/'
    default:
      throw new Error(`unknown build kind ${target.how}`)
  }
}
