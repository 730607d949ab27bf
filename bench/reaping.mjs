// Reaping figures (issue 3), side by side with what the field does today. Called by run.mjs.
import { spawn as nodeSpawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execa } from 'execa'

const here = dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)
const reapkit = require(join(here, '..', 'dist', 'cjs', 'index.js'))
const treeKill = require('tree-kill')
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js')

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const now = () => performance.now()

/** Every group this bench started, for the final sweep. */
const groups = new Set()
export function sweep() {
  for (const g of groups) {
    for (const pid of reapkit.groupMembers(g)) {
      try {
        const h = reapkit.openProcess(pid)
        h.signal('SIGKILL')
        h.close()
      } catch {}
    }
  }
}

async function waitMembers(pgid, n, ms = 10_000) {
  const deadline = now() + ms
  while (reapkit.groupMembers(pgid).length < n) {
    if (now() > deadline) throw new Error(`bench: group ${pgid} did not reach ${n} members`)
    await sleep(5)
  }
}

/** A three-level tree: sh -> sh -> sleep, in its own group. */
async function tree() {
  const child = reapkit.spawn('sh', ['-c', "sh -c 'sleep 1000; :' & wait"], { stdio: 'ignore' })
  groups.add(child.pid)
  await waitMembers(child.pid, 3)
  const members = reapkit.groupMembers(child.pid)
  // Observe each member's exit from here too, by pidfd: when did the last one really go?
  const exits = members.map((pid) => reapkit.watchExit(pid).then(() => now()))
  return { child, pgid: child.pid, members, lastExit: () => Promise.all(exits).then((ts) => Math.max(...ts)) }
}

/** Pin every process of the group by pidfd (so a later SIGKILL can never hit a recycled pid). */
function pin(pgid) {
  const handles = []
  for (const pid of reapkit.groupMembers(pgid)) {
    try { handles.push(reapkit.openProcess(pid)) } catch {}
  }
  return handles
}
/** SIGKILL whatever a pinned tree still has, and wait (bounded) until it is gone. */
async function finish(handles) {
  for (const h of handles) {
    try { h.signal('SIGKILL') } catch {}
  }
  for (const h of handles) {
    await Promise.race([h.exited, sleep(5000)])
    h.close()
  }
}

/**
 * execa's way: the same tree started by execa (in its own group, detached, so survivors can be
 * counted and swept; execa signals by pid either way), stopped by `subprocess.kill()`, which sends
 * SIGTERM to the direct child and arms `forceKillAfterDelay` (SIGKILL to the same child, 5 s default).
 * Time is to the execa promise settling; survivors are counted at that moment. With execa's default
 * stdio (pipes) the promise waits for the pipes, which the orphaned grandchild holds: it is given
 * `capMs` to settle and then recorded as unsettled.
 */
async function execaStop(stdio, capMs) {
  const cmd = "sh -c 'sleep 1000; :' & wait"
  const sub = execa('sh', ['-c', cmd], { detached: true, stdio, forceKillAfterDelay: 5000 })
  groups.add(sub.pid)
  const settled = sub.then(() => now(), () => now())
  await waitMembers(sub.pid, 3)
  const handles = pin(sub.pid)
  const t0 = now()
  sub.kill()
  const done = await Promise.race([settled, sleep(capMs).then(() => null)])
  const atSettle = reapkit.groupMembers(sub.pid).length
  await finish(handles)
  await Promise.race([settled, sleep(5000)])
  return done === null ? { ms: null, settled: false, capMs, survivors: atSettle } : { ms: done - t0, settled: true, survivors: atSettle }
}

export async function stopTree(samples, { execaPipeSamples = 1, execaPipeCapMs = 1000 } = {}) {
  const rows = { reapkit: [], treeKill: [], poll100: [], execa: [], execaPipes: [] }
  for (let i = 0; i < execaPipeSamples; i++) rows.execaPipes.push(await execaStop('pipe', execaPipeCapMs))
  for (let i = 0; i < samples; i++) {
    // reapkit: SIGTERM the group, wait by event, confirm it empty.
    {
      const t = await tree()
      const t0 = now()
      const r = await reapkit.killProcessGracefully(t.child, { graceMs: 10_000 })
      const done = now()
      const last = await t.lastExit()
      rows.reapkit.push({ ms: done - t0, lagMs: done - last, survivors: reapkit.groupMembers(t.pgid).length + r.survivors.length })
    }
    // tree-kill: walks the tree with ps, sends SIGTERM, calls back; it confirms nothing.
    {
      const t = await tree()
      const t0 = now()
      await new Promise((res) => treeKill(t.child.pid, 'SIGTERM', res))
      const done = now()
      const atCallback = reapkit.groupMembers(t.pgid).length
      const last = await t.lastExit()
      rows.treeKill.push({ ms: done - t0, lagMs: done - last, survivors: atCallback })
    }
    // A Go-proxy-style loop: SIGTERM to the group, then kill(-pgid, 0) every 100 ms until ESRCH.
    {
      const t = await tree()
      const t0 = now()
      process.kill(-t.pgid, 'SIGTERM')
      for (;;) {
        try {
          process.kill(-t.pgid, 0)
        } catch {
          break
        }
        await sleep(100)
      }
      const done = now()
      const last = await t.lastExit()
      rows.poll100.push({ ms: done - t0, lagMs: done - last, survivors: reapkit.groupMembers(t.pgid).length })
    }
    // execa 9: subprocess.kill() + forceKillAfterDelay, stdio 'ignore' like the rows above.
    rows.execa.push(await execaStop('ignore', 10_000))
  }
  return rows
}

/** A server behind `sh -c` that ignores stdin end: reapkit closeClient vs the MCP SDK's close(). */
export async function closeServer(samples) {
  const dir = mkdtempSync(join(tmpdir(), 'reapkit-bench-'))
  const server = join(here, 'fixtures', 'stubborn-server.mjs')
  const command = `"${process.execPath}" "${server}"; :` // sh stays the parent, as with npx/uvx wrappers
  const rows = { reapkit: [], sdk: [] }
  try {
    for (let i = 0; i < samples; i++) {
      {
        const pidfile = join(dir, `r${i}`)
        const child = reapkit.spawn('sh', ['-c', command], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, PIDFILE: pidfile } })
        groups.add(child.pid)
        while (!existsSync(pidfile)) await sleep(5)
        const serverPid = Number(readFileSync(pidfile, 'utf8'))
        const t0 = now()
        const report = await reapkit.closeClient(child)
        const ms = now() - t0
        await sleep(50)
        rows.reapkit.push({ ms, phase: report.phase, survivors: alive(serverPid) ? 1 : 0 })
      }
      {
        const pidfile = join(dir, `s${i}`)
        const transport = new StdioClientTransport({ command: 'sh', args: ['-c', command], env: { ...process.env, PIDFILE: pidfile }, stderr: 'inherit' })
        await transport.start()
        while (!existsSync(pidfile)) await sleep(5)
        const serverPid = Number(readFileSync(pidfile, 'utf8'))
        const t0 = now()
        await transport.close()
        const ms = now() - t0
        await sleep(50)
        const survivors = alive(serverPid) ? 1 : 0
        rows.sdk.push({ ms, survivors })
        try {
          process.kill(serverPid, 'SIGKILL') // the SDK left it running: clean up after measuring
        } catch {}
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return rows
}

function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
    return state !== 'Z' && state !== 'X'
  } catch {
    return false
  }
}

/** shutdownAll wall time against the number of children (each exits on SIGTERM after the close window). */
export async function shutdownScaling(counts) {
  const rows = []
  for (const n of counts) {
    const sup = new reapkit.Supervisor({ closeTimeoutMs: 250, graceMs: 5000, backstop: false })
    const kids = []
    for (let i = 0; i < n; i++) {
      const k = sup.spawn('sleep', ['1000'], { stdio: ['pipe', 'ignore', 'ignore'] })
      groups.add(k.pid)
      kids.push(k)
    }
    const deadline = now() + 30_000
    while (kids.some((k) => reapkit.groupMembers(k.pid).length === 0) && now() < deadline) await sleep(10)
    const t0 = now()
    const reports = await sup.shutdownAll()
    const ms = now() - t0
    const survivors = kids.reduce((s, k) => s + reapkit.groupMembers(k.pid).length, 0)
    rows.push({ n, ms, escalated: reports.filter((r) => r.escalated).length, survivors })
    sup.dispose()
  }
  return rows
}
