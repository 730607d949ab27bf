// Figures for the `reapkit` command (issue 5), side by side. Called by run.mjs.
//  - start-up latency: the command bare, under `reapkit --` as installed from the packed tarball
//    (npm's node_modules/.bin symlink) and from this checkout, under the supervisor binary directly
//    (no launcher), and under a Node-resident wrapper;
//  - resident memory of the supervising process while the command runs;
//  - survivors after the host is SIGKILLed, with and without the wrapper, for a server behind
//    `sh -c` that ignores stdin end and for one that daemonizes a helper.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ownerTag, removeOwnedCgroups } from './cgroups.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')
const require = createRequire(import.meta.url)
const reapkit = require(join(root, 'dist', 'cjs', 'index.js'))
const BIN = join(root, 'bin', 'reapkit')
const NODE_WRAPPER = join(here, 'fixtures', 'node-wrapper.cjs')
const sleep = (t) => new Promise((r) => setTimeout(r, t))

/**
 * Wall time of `argv` from spawn to exit, n runs per variant, interleaved so drift hits all alike.
 * `installed` is what users run: npm's node_modules/.bin/reapkit symlink of the packed tarball,
 * installed into a temporary project (installed.mjs); `reapkit` is this checkout's bin/reapkit.
 */
export function startupLatency(n, installedBin) {
  const supervisor = reapkit.supervisorPath()
  const variants = {
    bare: ['/bin/true'],
    installed: [installedBin, '--', '/bin/true'],
    reapkit: [BIN, '--', '/bin/true'],
    supervisorDirect: [supervisor, '--', '/bin/true'],
    nodeWrapper: [process.execPath, NODE_WRAPPER, '/bin/true'],
  }
  const out = Object.fromEntries(Object.keys(variants).map((k) => [k, []]))
  for (let i = 0; i < n; i++) {
    for (const [name, [cmd, ...args]] of Object.entries(variants)) {
      const t0 = process.hrtime.bigint()
      const r = spawnSync(cmd, args, { stdio: 'ignore', timeout: 10_000 })
      const t = Number(process.hrtime.bigint() - t0) / 1e6
      if (r.status !== 0) throw new Error(`bench: ${name} exited ${r.status}`)
      out[name].push(t)
    }
  }
  return out
}

function rssKb(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+)/m)
  return m ? Number(m[1]) : NaN
}

/** Resident memory of the supervising process 500 ms after start, with `sleep` as the command. */
export async function residentMemory() {
  const out = {}
  for (const [name, cmd, args] of [
    ['reapkit', BIN, ['--', 'sleep', '30']],
    ['nodeWrapper', process.execPath, [NODE_WRAPPER, 'sleep', '30']],
  ]) {
    const c = spawn(cmd, args, { stdio: 'ignore', detached: true })
    const h = reapkit.openProcess(c.pid)
    const tag = name === 'reapkit' ? ownerTag(c.pid) : null
    try {
      await sleep(500)
      out[name] = rssKb(c.pid)
    } finally {
      // The wrapper is stopped as a host stops it (SIGTERM: it stops its command and removes its
      // cgroup); a SIGKILL would leave its cgroup behind. Then the group, whatever is left of it.
      if (name === 'reapkit') {
        try { h.signal('SIGTERM') } catch {} // (gone already)
        await Promise.race([h.exited, sleep(5000)])
      }
      try { process.kill(-c.pid, 'SIGKILL') } catch {} // its own group: detached
      await Promise.race([h.exited, sleep(5000)])
      h.close()
      await removeOwnedCgroups(tag) // (none when it stopped in time)
    }
  }
  return out
}

function childrenOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}
const descendants = (pid) => childrenOf(pid).flatMap((c) => [c, ...descendants(c)])
const HOST = `const c = require('node:child_process').spawn(process.argv[1], process.argv.slice(2), { stdio: ['pipe', 'pipe', 'inherit'] });
console.log(c.pid); setInterval(() => {}, 1e6)`

/**
 * A host (a Node process holding the server's stdin and stdout, as an MCP host does) starts the
 * server, wrapped or not; once every process of the server is up, the host is SIGKILLed and the
 * survivors are counted `settleMs` later. Every process is pinned by a pidfd before the kill, so
 * the sweep afterwards can never signal a recycled pid.
 */
export async function survivorsAfterHostKill(rounds) {
  const stubborn = join(here, 'fixtures', 'stubborn-server.mjs')
  // [command, args]; each process of the server appends its pid to $PIDFILE (two per scenario).
  const scenarios = {
    'behind `sh -c`, ignores stdin end': ['sh', ['-c', `echo $$ >> "$PIDFILE"; node ${stubborn}; :`]],
    'daemonizes a helper (setsid, double fork)': ['sh', [join(here, 'fixtures', 'daemonizing-server.sh')]],
  }
  const wrapArgs = ['--close-timeout', '500', '--grace', '1000', '--']
  const settleMs = 3000
  const dir = mkdtempSync(join(tmpdir(), 'reapkit-bench-cli-'))
  const rows = []
  try {
    for (const [scenario, [cmd, args]] of Object.entries(scenarios)) {
      for (const wrapped of [false, true]) {
        let survivors = 0
        let processes = 0
        for (let i = 0; i < rounds; i++) {
          const pidfile = join(dir, `pids-${rows.length}-${i}`)
          const argv = wrapped ? [BIN, ...wrapArgs, cmd, ...args] : [cmd, ...args]
          const host = spawn(process.execPath, ['-e', HOST, ...argv], {
            stdio: ['ignore', 'pipe', 'inherit'],
            detached: true,
            env: { ...process.env, PIDFILE: pidfile },
          })
          const handles = []
          let wrapperTag = null
          try {
            // The host says its child's pid: the wrapper, when wrapped (its cgroup's owner).
            const child = await new Promise((resolve) => host.stdout.once('data', (d) => resolve(Number(String(d).trim()))))
            if (wrapped) wrapperTag = ownerTag(child)
            // Up: the server wrote its pid (and the helper its own) to the pid file.
            const deadline = Date.now() + 10_000
            while (Date.now() < deadline) {
              let n = 0
              try { n = readFileSync(pidfile, 'utf8').trim().split('\n').length } catch {}
              if (n >= 2) break
              await sleep(10)
            }
            await sleep(100)
            const tree = descendants(host.pid)
            for (const pid of tree) {
              try { handles.push(reapkit.openProcess(pid)) } catch {}
            }
            // The daemonized helper has left the tree: find it by the pid it wrote.
            for (const pid of readFileSync(pidfile, 'utf8').trim().split('\n').map(Number)) {
              if (!tree.includes(pid)) try { handles.push(reapkit.openProcess(pid)) } catch {}
            }
            processes += handles.length
            process.kill(host.pid, 'SIGKILL')
            await sleep(settleMs)
            survivors += handles.filter((h) => !isDone(h)).length
          } finally {
            try { process.kill(-host.pid, 'SIGKILL') } catch {}
            for (const h of handles) {
              try { h.signal('SIGKILL') } catch {}
            }
            for (const h of handles) {
              await Promise.race([h.exited, sleep(5000)])
              h.close()
            }
            // A wrapper still stopping at the sweep (a busy machine) was SIGKILLed: its cgroup stays.
            await removeOwnedCgroups(wrapperTag)
          }
        }
        rows.push({ scenario, wrapped, rounds, processes, survivors, settleMs })
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return rows
}

function isDone(handle) {
  try {
    handle.signal(0)
    return false
  } catch {
    return true // ESRCH: exited (zombies included: the handle refuses them)
  }
}
