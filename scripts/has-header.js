#!/usr/bin/env node
// Prints 1 if the C compiler can include the header named on the command line, else 0.
// binding.gyp uses it to pick the kqueue exit watcher by the presence of <sys/event.h> rather than
// by OS name (CMakeLists.txt does the same with check_include_file_cxx).
'use strict'
const { spawnSync } = require('node:child_process')
const header = process.argv[2]
if (!header || !/^[\w./-]+$/.test(header)) {
  process.stdout.write('0')
  process.exit(0)
}
const cc = process.env.CC || 'cc'
const r = spawnSync(cc, ['-E', '-x', 'c', '-'], {
  input: `#include <${header}>\n`,
  stdio: ['pipe', 'ignore', 'ignore'],
  timeout: 30000,
})
process.stdout.write(r.status === 0 ? '1' : '0')
