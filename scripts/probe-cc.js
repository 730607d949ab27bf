#!/usr/bin/env node
// Build-time probes of the C compiler, for binding.gyp (CMakeLists.txt has its own equivalents).
// Prints 1 or 0, never fails:
//   probe-cc.js header sys/event.h   can the compiler include the header? (picks the kqueue exit
//                                    watcher by the header's presence rather than by OS name)
//   probe-cc.js static               can it link a fully static executable? (both helpers, the
//                                    exec helper and the native supervisor, are linked statically
//                                    where it can: about half the resident memory, and they run
//                                    on any libc; Debian has libc.a in libc6-dev, other
//                                    distributions may not)
'use strict'
const { spawnSync } = require('node:child_process')
const { mkdtempSync, rmSync } = require('node:fs')
const { tmpdir } = require('node:os')
const { join } = require('node:path')

const cc = process.env.CC || 'cc'
const [what, arg] = process.argv.slice(2)
let ok = false
if (what === 'header' && arg && /^[\w./-]+$/.test(arg)) {
  const r = spawnSync(cc, ['-E', '-x', 'c', '-'], {
    input: `#include <${arg}>\n`,
    stdio: ['pipe', 'ignore', 'ignore'],
    timeout: 30000,
  })
  ok = r.status === 0
} else if (what === 'static' && process.platform === 'linux') {
  const dir = mkdtempSync(join(tmpdir(), 'reapkit-probe-'))
  try {
    const r = spawnSync(cc, ['-static', '-x', 'c', '-', '-o', join(dir, 'a.out')], {
      input: '#include <signal.h>\nint main(void) { return sigaction(SIGTERM, 0, 0); }\n',
      stdio: ['pipe', 'ignore', 'ignore'],
      timeout: 30000,
    })
    ok = r.status === 0
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
process.stdout.write(ok ? '1' : '0')
