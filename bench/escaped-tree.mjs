// Stopping a tree of N processes of which E escaped their group (setsid, as daemons do), five ways
// in the same run, interleaved (issue 30): time to confirmed-gone, and the survivors each leaves.
//   - the kernel floor for a cgroup: `cgroup.kill`, then `populated 0` on cgroup.events (inotify);
//   - killProcessGracefully on a child spawned with { cgroup: true } (SIGTERM to every member
//     through its pin, gone when the cgroup says `populated 0`);
//   - killProcessGracefully without a cgroup: the group kill, which cannot see the E escapees;
//   - `reapkit --` (SIGTERM to the wrapper until it exited), its command in a cgroup of its own: SIGTERM
//     to each member of cgroup.procs, gone at `populated 0`, no /proc read during the stop;
//   - `reapkit --no-cgroup --`: the same stop through its subreaper (a walk of its tree in /proc).
// The tree is bench/fixtures/pauser.c's (`tree N E`: static, paused processes). Every process
// started is recorded (pid and start time) before the stop and, if it survived, SIGKILLed by pin.
//   node bench/escaped-tree.mjs [N] [E] [runs]   prints the table alone
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync, watch, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildPauser } from './wrapper-stop.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const DIST = join(here, '..', 'dist', 'cjs', 'index.js')
const require = createRequire(import.meta.url)
const SUPERVISOR = process.env.REAPKIT_SUPERVISOR || join(here, '..', 'build', 'Release', 'helper', 'reapkit-supervise')
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]

/** pid -> { ppid, start, state } for every process now. */
function table() {
  const rows = new Map()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const s = readFileSync(`/proc/${name}/stat`, 'latin1')
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ')
      rows.set(Number(name), { state: f[0], ppid: Number(f[1]), start: f[19] })
    } catch {
      // gone meanwhile
    }
  }
  return rows
}

/** `root` and its descendants now, with their start times. */
function treeOf(root) {
  const rows = table()
  const kids = new Map()
  for (const [pid, r] of rows) kids.set(r.ppid, [...(kids.get(r.ppid) ?? []), pid])
  const out = []
  const todo = [root]
  while (todo.length > 0) {
    const pid = todo.pop()
    if (rows.has(pid)) out.push({ pid, start: rows.get(pid).start })
    todo.push(...(kids.get(pid) ?? []))
  }
  return out
}

/** Those of `procs` still alive (same start time, not a zombie). */
function alive(procs) {
  const rows = table()
  return procs.filter((p) => rows.get(p.pid)?.start === p.start && rows.get(p.pid)?.state !== 'Z')
}

/** SIGKILLs what survived, each pinned by pidfd and checked by start time first; waits for them (bounded). */
async function cleanup(procs) {
  const r = require(DIST)
  const exits = []
  for (const p of alive(procs)) {
    try {
      const h = r.openProcess(p.pid)
      if (alive([p]).length === 1) {
        h.signal('SIGKILL')
        exits.push(h.exited.finally(() => h.close()))
      } else h.close()
    } catch {
      // gone
    }
  }
  await Promise.race([Promise.all(exits), new Promise((res) => setTimeout(res, 10_000))])
}

function ready(child) {
  return new Promise((resolve, reject) => {
    let buf = ''
    const timer = setTimeout(() => reject(new Error('bench: the tree did not get ready')), 60_000)
    child.stdout.on('data', (d) => {
      buf += d
      if (buf.includes('ready')) {
        clearTimeout(timer)
        resolve()
      }
    })
  })
}

/** Resolves once cgroup.events says `populated 0` (inotify; bounded). */
function emptied(cg, ms) {
  return new Promise((resolve) => {
    let over = false
    const look = () => {
      let events
      try {
        events = readFileSync(join(cg, 'cgroup.events'), 'latin1')
      } catch (err) {
        // Removed (the stop removes its cgroup once empty): nothing is in it any more.
        if (err.code === 'ENOENT' || err.code === 'ENODEV') return done(true)
        throw err
      }
      if (/^populated 0$/m.test(events)) done(true)
    }
    const w = watch(join(cg, 'cgroup.events'), look)
    w.on('error', () => look()) // the file went with its cgroup: look says so
    const t = setTimeout(() => done(false), ms)
    const done = (v) => {
      if (over) return
      over = true
      clearTimeout(t)
      w.close()
      resolve(v)
    }
    look()
  })
}

/** One run of one method: { ms, survivors, processes }. */
async function once(method, pauser, n, e) {
  const r = require(DIST)
  if (method === 'wrapper' || method === 'wrapper-subreaper') {
    const opts = method === 'wrapper' ? [] : ['--no-cgroup']
    const w = spawn(SUPERVISOR, ['--grace', '9000', ...opts, '--', pauser, 'tree', String(n), String(e)], { stdio: ['ignore', 'pipe', 'inherit'] })
    await ready(w)
    const procs = treeOf(w.pid).filter((p) => p.pid !== w.pid)
    const exited = new Promise((res) => w.once('exit', res))
    const t0 = performance.now()
    w.kill('SIGTERM')
    await exited
    const ms = performance.now() - t0
    const left = alive(procs)
    await cleanup(procs)
    return { ms, survivors: left.length, processes: procs.length }
  }
  const child = r.spawn(pauser, ['tree', String(n), String(e)], { cgroup: method !== 'group', stdio: ['ignore', 'pipe', 'inherit'] })
  await ready(child)
  const cg = r.spawnedInfo(child).cgroup
  const procs = treeOf(child.pid)
  const t0 = performance.now()
  if (method === 'floor') {
    writeFileSync(join(cg, 'cgroup.kill'), '1')
    if (!(await emptied(cg, 30_000))) throw new Error('bench: the cgroup did not empty')
  } else {
    await r.killProcessGracefully(child, { graceMs: 9000 })
  }
  const ms = performance.now() - t0
  const left = alive(procs)
  await cleanup(procs)
  return { ms, survivors: left.length, processes: procs.length }
}

const METHODS = (process.env.BENCH_ESCAPED_METHODS || 'floor,cgroup,group,wrapper,wrapper-subreaper').split(',')

/** Every method `runs` times, interleaved; null figures where no cgroup is ours (the reason). */
export async function escapedTreeFigures(n = 1000, e = 100, runs = 5) {
  const cap = require(DIST).capabilities().cgroup
  if (!cap.available) return { n, e, runs, reason: cap.reason }
  const pauser = buildPauser()
  const rows = Object.fromEntries(METHODS.map((m) => [m, []]))
  try {
    for (let i = 0; i < runs; i++) for (const m of METHODS) rows[m].push(await once(m, pauser.path, n, e))
  } finally {
    pauser.cleanup()
  }
  return { n, e, runs, reason: null, rows }
}

export function escapedTreeMarkdown(d) {
  const title = `## Stopping a ${d.n}-process tree of which ${d.e} escaped their group`
  if (d.reason) return `${title}\n\nNot measured: ${d.reason}.\n`
  const f = (v) => (v >= 10 ? v.toFixed(1) : v.toFixed(2))
  const line = (name, m) => {
    const rs = d.rows[m]
    if (!rs) return `| ${name} | not run (BENCH_ESCAPED_METHODS) | | | | |`
    return `| ${name} | ${median(rs.map((r) => r.processes))} | ${f(median(rs.map((r) => r.ms)))} | ${f(Math.max(...rs.map((r) => r.ms)))} | ${median(rs.map((r) => r.survivors))} | ${Math.max(...rs.map((r) => r.survivors))} |`
  }
  return `${title}

A tree of ${d.n} paused processes (\`pauser tree ${d.n} ${d.e}\`: ${d.e} of them called \`setsid()\`, as daemons do), stopped five ways,
${d.runs} runs each, interleaved in this run: time from the stop's first act to confirmed gone (each method's own
confirmation), and how many of the tree's processes were still alive right after it.

| method | processes seen before | median ms | max ms | survivors (median) | survivors (max) |
|---|---:|---:|---:|---:|---:|
${line('kernel floor: `cgroup.kill`, then `populated 0` (inotify)', 'floor')}
${line('`killProcessGracefully`, child spawned with `cgroup: true` (SIGTERM to each member, gone at `populated 0`)', 'cgroup')}
${line('`killProcessGracefully` without a cgroup (the group kill: its report says `reach: \'group\'`)', 'group')}
${line('`reapkit --`, SIGTERM to the wrapper until it exited: its command\'s cgroup (SIGTERM to each member, gone at `populated 0`)', 'wrapper')}
${line('`reapkit --no-cgroup --`, the same: its subreaper (its tree walked in /proc)', 'wrapper-subreaper')}
`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(escapedTreeMarkdown(await escapedTreeFigures(Number(process.argv[2] ?? 1000), Number(process.argv[3] ?? 100), Number(process.argv[4] ?? 5))))
}
