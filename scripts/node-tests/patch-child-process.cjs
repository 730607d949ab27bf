// Preloaded (`node -r`) into each of Node's own tests by run.mjs: child_process's spawn, exec,
// execFile and fork become reapkit's, as a user's preload would make them, before the test's first
// `require('child_process')`. Forked children inherit the preload through execArgv.
'use strict'
const childProcess = require('node:child_process')
const reapkit = require(process.env.REAPKIT_DIST)
for (const name of ['spawn', 'exec', 'execFile', 'fork']) childProcess[name] = reapkit[name]
require('node:module').syncBuiltinESMExports()
