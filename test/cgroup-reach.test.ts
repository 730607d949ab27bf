// Issue 30 item 5: a stop that cannot see escapees says so. A server double-forks a daemon out of
// its group: stopped without a cgroup, the report has no survivors, yet the daemon runs: its
// `reach` says 'group' (what left the group was not seen), never 'cgroup'. Contained, the daemon
// is ended and the report says 'cgroup'.
import { describe, expect, it } from 'vitest'
import { closeClient, killProcessGracefully, spawn, spawnedInfo } from '../lib/index'
import { cleanupAfterEach, noCgroup } from './cgroup-lib'
import { isGone, waitFor } from './helpers'

const { made, strays } = cleanupAfterEach()

/** A server with a double-forked daemon; resolves with the daemon's pid once it runs. */
async function server(cgroup: boolean, stdin: 'ignore' | 'pipe' = 'ignore') {
  const child = spawn('sh', ['-c', `(setsid sh -c 'echo $$; exec sleep 300' &); exec ${stdin === 'pipe' ? 'cat' : 'sleep 300'}`], { cgroup, stdio: [stdin, 'pipe', 'inherit'] })
  const cg = spawnedInfo(child)!.cgroup
  if (cg) made.add(cg)
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += String(d)))
  await waitFor(() => out.includes('\n'), 30_000, 'the daemon')
  const daemon = Number(out.trim())
  strays.add(daemon)
  return { child, daemon }
}

const linux = process.platform === 'linux'

describe.runIf(linux)('KillResult.reach: what the stop could see', () => {
  it("without a cgroup: no survivors reported, the daemon runs on, and the report says 'group'", async () => {
    const { child, daemon } = await server(false)
    const r = await killProcessGracefully(child, { graceMs: 2000 })
    expect(r.survivors).toEqual([])
    expect(isGone(daemon)).toBe(false)
    expect(r.reach).toBe('group')
  })

  it("group: false: the report says 'process'", async () => {
    const { child, daemon } = await server(false)
    const r = await killProcessGracefully(child, { graceMs: 2000, group: false })
    expect(r.reach).toBe('process')
    expect(isGone(daemon)).toBe(false)
  })

  it.skipIf(noCgroup !== null)("with { cgroup: true }: the daemon is ended and the report says 'cgroup' (killProcessGracefully and closeClient)", async () => {
    const a = await server(true)
    const r = await killProcessGracefully(a.child, { graceMs: 2000 })
    expect(r.reach).toBe('cgroup')
    expect(isGone(a.daemon)).toBe(true)
    const b = await server(true, 'pipe')
    const c = await closeClient(b.child, { closeTimeoutMs: 2000, graceMs: 2000 })
    expect(c.reach).toBe('cgroup')
    expect(isGone(b.daemon)).toBe(true)
  })

  it('closeClient without a cgroup says \'group\' while the daemon runs on', async () => {
    const { child, daemon } = await server(false, 'pipe')
    const c = await closeClient(child, { closeTimeoutMs: 2000, graceMs: 2000 })
    expect(c.phase).toBe('graceful')
    expect(c.reach).toBe('group')
    expect(isGone(daemon)).toBe(false)
  })
})
