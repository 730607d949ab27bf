#!/usr/bin/env node
// check-addon.cjs PATH: loads one built addon file directly (e.g. the cmake-js build) and checks
// that its primitives work for real: capabilities, an exit event from the watcher thread, a pidfd
// handle, and Node-style errors. Exits non-zero on any failure.
'use strict'
const { spawn } = require('node:child_process')
const { spawnSync } = require('node:child_process')
const { existsSync } = require('node:fs')
const { dirname, join, resolve } = require('node:path')
const assert = require('node:assert/strict')

const file = resolve(process.argv[2] || '')
const b = require(file)
const timer = setTimeout(() => {
  console.error('check-addon: timed out')
  process.exit(1)
}, 10_000)

const pending = new Map()
// The watcher's contract: one call per wake-up with a Float64Array of (watch id, code, signal)
// triples, -1 for unknown (lib/mechanisms/handle.ts is the real dispatcher).
b.watcherStart((batch) => {
  assert.ok(batch instanceof Float64Array && batch.length % 3 === 0, `dispatch got ${batch}`)
  for (let i = 0; i < batch.length; i += 3) {
    const f = pending.get(batch[i])
    pending.delete(batch[i])
    if (f) f(batch[i + 1] < 0 ? null : batch[i + 1], batch[i + 2] < 0 ? null : batch[i + 2])
  }
})
b.watcherRef(true)
const child = spawn('sleep', ['1000'], { stdio: 'ignore' })
const handle = new b.ProcessHandle(child.pid)
const id = b.watch(handle)
pending.set(id, (code, signal) => {
  try {
    assert.ok(signal === null || signal === 9, `signal ${signal}`)
    assert.throws(() => handle.signal(15), (e) => e.code === 'ESRCH')
    handle.close()
    assert.throws(() => b.kill(1, 0), (e) => e.code === 'EINVAL' && e.syscall === 'kill' && e.errno < 0)
    assert.equal(typeof b.getpgid(0), 'number')
    assert.equal(b.watcherStats().watches, 0)
    // The exec helper must sit beside the addon (helper/ for a build, the same folder for a prebuild).
    const helper = [join(dirname(file), 'helper', 'reapkit-exec'), join(dirname(file), 'reapkit-exec')].find(existsSync)
    assert.ok(helper, 'no reapkit-exec beside the addon')
    const h = spawnSync(helper, ['1', '0', String(process.pid), '-1', 'sh', 'sh', '-c', 'ps -o pgid= -p $$'], { encoding: 'utf8' }) // GROUP SIGNAL PARENT REPORT FILE ARGV0 ARGS (no report fd)
    assert.equal(h.status, 0, h.stderr)
    assert.notEqual(Number(h.stdout.trim()), b.getpgid(0), 'the helper did not start a new process group')
    // So must the native supervisor of the `reapkit` command: it runs, forwards the exit status.
    const supervisor = [join(dirname(file), 'helper', 'reapkit-supervise'), join(dirname(file), 'reapkit-supervise')].find(existsSync)
    assert.ok(supervisor, 'no reapkit-supervise beside the addon')
    const s = spawnSync(supervisor, ['--', 'sh', '-c', 'exit 7'], { encoding: 'utf8', timeout: 5000 })
    assert.equal(s.status, 7, `reapkit-supervise: status ${s.status} ${s.stderr}`)
    console.log(`check-addon: ${file} ok ${JSON.stringify(b.capabilities)}, helpers ${helper} ${supervisor}`)
    clearTimeout(timer)
    b.watcherRef(false)
  } catch (err) {
    console.error(err)
    process.exit(1)
  }
})
handle.signal(9)
