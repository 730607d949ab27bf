#!/usr/bin/env node
// Build-time probes of the C compiler, for binding.gyp (CMakeLists.txt has its own equivalents of
// the first two). Prints 1 or 0 (musl-cc: a path or nothing), never fails:
//   probe-cc.js header sys/event.h   can the compiler include the header? (picks the kqueue exit
//                                    watcher by the header's presence rather than by OS name)
//   probe-cc.js static               can it link a fully static executable? (both helpers, the
//                                    exec helper and the native supervisor, are linked statically
//                                    where it can: about half the resident memory, and they run
//                                    on any libc; Debian has libc.a in libc6-dev, other
//                                    distributions may not)
//   probe-cc.js musl-cc ARCH         the C compiler that links the exec helper statically against
//                                    musl for ARCH (node-gyp's target_arch), or nothing. A static
//                                    glibc program costs ~0.3 ms more to start than a static musl
//                                    one (its startup, not the exec: bench/spawn-cost.mjs shows it
//                                    per spawn), and every spawn() starts the helper. Its search of
//                                    PATH is written out (native/exec_search.c), so it does what
//                                    glibc's execvp does with either libc. The compiler:
//                                    $REAPKIT_MUSL_CC if set (an absolute path; the prebuilds set
//                                    Zig's musl cc for the target; empty: none), else Debian's
//                                    musl-gcc (musl-tools) when ARCH is this machine's. Prints the
//                                    compiler's absolute path, or nothing; never fails.
'use strict'
const { spawnSync } = require('node:child_process')
const { accessSync, constants, mkdtempSync, rmSync } = require('node:fs')
const { tmpdir } = require('node:os')
const { delimiter, isAbsolute, join } = require('node:path')

const STATIC_PROGRAM = '#include <unistd.h>\n#include <signal.h>\nint main(int c, char **v) { if (c > 5) execve(v[0], v, 0); if (c > 6) fork(); return sigaction(SIGTERM, 0, 0); }\n'
/** The same, refused by a compiler whose C library is glibc (musl defines no macro of its own). */
const MUSL_PROGRAM = `#include <unistd.h>\n#if defined(__GLIBC__) || defined(__APPLE__)\n#error not musl\n#endif\n${STATIC_PROGRAM.replace('#include <unistd.h>\n', '')}`

const cc = process.env.CC || 'cc'
const [what, arg] = process.argv.slice(2)
if (what === 'musl-cc') {
  process.stdout.write(process.platform === 'linux' ? muslCc(arg) : '')
} else {
  let ok = false
  if (what === 'header' && arg && /^[\w./-]+$/.test(arg)) {
    const r = spawnSync(cc, ['-E', '-x', 'c', '-'], {
      input: `#include <${arg}>\n`,
      stdio: ['pipe', 'ignore', 'ignore'],
      timeout: 30000,
    })
    ok = r.status === 0
  } else if (what === 'static' && process.platform === 'linux') {
    ok = linksStatic(cc)
  }
  process.stdout.write(ok ? '1' : '0')
}

/** The absolute path of an executable `name` on PATH, or null. */
function onPath(name) {
  for (const dir of (process.env.PATH || '').split(delimiter)) {
    if (!isAbsolute(dir)) continue // never a compiler from the current directory
    try {
      accessSync(join(dir, name), constants.X_OK)
      return join(dir, name)
    } catch {}
  }
  return null
}

/** Whether `compiler` links `program` statically: by default one that forks, execs and sets a signal action (what the helpers do). */
function linksStatic(compiler, program = STATIC_PROGRAM) {
  const dir = mkdtempSync(join(tmpdir(), 'reapkit-probe-'))
  try {
    const r = spawnSync(compiler, ['-static', '-x', 'c', '-', '-o', join(dir, 'a.out')], {
      input: program,
      stdio: ['pipe', 'ignore', 'ignore'],
      timeout: 120000, // Zig compiles musl's libc.a on its first use
    })
    return r.status === 0
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function muslCc(targetArch) {
  const given = process.env.REAPKIT_MUSL_CC
  if (given !== undefined) {
    if (given === '') return ''
    if (isAbsolute(given) && linksStatic(given, MUSL_PROGRAM)) return given
    // binding.gyp then links the helper against glibc: say so (node-gyp shows a probe's stderr).
    process.stderr.write(`reapkit: REAPKIT_MUSL_CC=${given} is not an absolute path to a C compiler that links a static musl program: the exec helper is linked as without it\n`)
    return ''
  }
  if (targetArch !== process.arch) return '' // a cross build names its compiler
  const found = onPath('musl-gcc')
  return found && linksStatic(found, MUSL_PROGRAM) ? found : ''
}
