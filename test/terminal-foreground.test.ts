// spawn() under a terminal (issue 22 item 3): a child that inherits the terminal, started while we
// hold its foreground, is handed the foreground as a shell's foreground job is: it reads the
// terminal, Ctrl-C and Ctrl-Z reach it, and the terminal comes back when it ends or stops. The
// terminal is a real pty (`script`); the host is test/fixtures/foreground.cjs. The pty's processes
// are in script's session, not in a group this file spawned: each is tracked by the group it
// reports, and the leak guard (test/setup.ts) fails the test if anything outlives it.
import { type ChildProcess, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { exitOf, FIXTURES, isGone, procStat, spawnGroup, trackGroup, waitFor } from './helpers'

const linux = process.platform === 'linux'
const canScript = linux && spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0

interface Started {
  node: number
  pgrp: number
  child: number
}

/** The host under a fresh pty: its JSON lines, and a way to type. */
function underTerminal(script: string, env: NodeJS.ProcessEnv = {}) {
  const cmd = `"${process.execPath}" "${join(FIXTURES, 'foreground.cjs')}" '${script}'`
  const term = spawnGroup('script', ['-qfec', cmd, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'], env })
  let out = ''
  term.stdout!.setEncoding('utf8')
  term.stdout!.on('data', (d: string) => (out += d))
  const events = () =>
    out
      .split(/\r?\n/)
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
  const next = async (event: string, timeoutMs = 10_000) => {
    await waitFor(() => events().some((e) => e.event === event), timeoutMs, `${event} (terminal so far: ${JSON.stringify(out)})`)
    return events().find((e) => e.event === event)!
  }
  return { term, out: () => out, next, type: (s: string) => term.stdin!.write(s) }
}

async function started(t: ReturnType<typeof underTerminal>): Promise<Started> {
  const s = (await t.next('started')) as unknown as Started
  trackGroup(s.pgrp)
  trackGroup(s.child)
  return s
}

/** The process's state letter and its terminal's foreground group (/proc/PID/stat fields 3 and 8). */
function stateOf(pid: number): { state: string; tpgid: number } | null {
  const f = procStat(pid)
  return f ? { state: f[0]!, tpgid: Number(f[5]) } : null
}

async function finish(term: ChildProcess, s: Started | null): Promise<void> {
  term.stdin!.end()
  if (s) await waitFor(() => isGone(s.node) && isGone(s.child), 10_000, 'the host and its child to be gone')
  await exitOf(term, 10_000)
}

describe.runIf(canScript)('spawn under a terminal: the foreground job', () => {
  it('the child reads the terminal (no SIGTTIN), and the terminal comes back to the host when it exits', async () => {
    const t = underTerminal('read x; echo got:$x')
    const s = await started(t)
    expect(stateOf(s.node)?.tpgid, 'the child\'s group holds the terminal while it runs').toBe(s.child)
    t.type('hello\n')
    await waitFor(() => t.out().includes('got:hello'), 10_000, `the child to read the line (terminal: ${JSON.stringify(t.out())}, host ${JSON.stringify(stateOf(s.node))}, child ${JSON.stringify(stateOf(s.child))})`)
    expect(await t.next('child-exit')).toMatchObject({ code: 0, signal: null })
    t.type('back\n')
    expect(await t.next('node-read')).toMatchObject({ line: 'back' })
    await finish(t.term, s)
  })

  it('Ctrl-C reaches the child, not the host', async () => {
    const t = underTerminal('trap "echo INT-caught; exit 3" INT; read x')
    const s = await started(t)
    await waitFor(() => stateOf(s.child)?.state === 'S', 10_000, 'the child to wait in read')
    t.type('\x03')
    expect(await t.next('child-exit')).toMatchObject({ code: 3, signal: null })
    expect(t.out()).toContain('INT-caught')
    t.type('back\n')
    expect(await t.next('node-read')).toMatchObject({ line: 'back' })
    await finish(t.term, s)
  })

  it('Ctrl-Z stops the child and the host with it, terminal back to the host; SIGCONT to the host (fg) gives it back and continues the child', async () => {
    const t = underTerminal('read x; echo got:$x')
    const s = await started(t)
    await waitFor(() => stateOf(s.child)?.state === 'S', 10_000, 'the child to wait in read')
    t.type('\x1a')
    await waitFor(() => stateOf(s.node)?.state === 'T' && stateOf(s.child)?.state === 'T', 10_000, 'the child and the host to be stopped')
    expect(stateOf(s.node)?.tpgid, 'the terminal is back with the host\'s group').toBe(s.pgrp)
    // What a shell's `fg` does, the terminal already with the host's group: SIGCONT to the job. Here
    // the job is `script` (its own group, which this test started; script stops itself when its
    // child stops, as a job's members do) and the host in script's session.
    process.kill(-t.term.pid!, 'SIGCONT')
    process.kill(s.node, 'SIGCONT')
    await waitFor(() => stateOf(s.child)?.state === 'S' && stateOf(s.node)?.tpgid === s.child, 10_000, 'the child to run again in the foreground')
    t.type('hello\n')
    await waitFor(() => t.out().includes('got:hello'), 10_000, `the child to read the line (terminal: ${JSON.stringify(t.out())}, host ${JSON.stringify(stateOf(s.node))}, child ${JSON.stringify(stateOf(s.child))})`)
    expect(await t.next('child-exit')).toMatchObject({ code: 0, signal: null })
    t.type('back\n')
    expect(await t.next('node-read')).toMatchObject({ line: 'back' })
    await finish(t.term, s)
  })

  it('a child whose stdin is a pipe is no foreground job: the host keeps the terminal (and its Ctrl-C)', async () => {
    const t = underTerminal('echo out-on-terminal; sleep 1000', { STDIN: 'pipe' })
    const s = await started(t)
    await waitFor(() => t.out().includes('out-on-terminal'), 10_000, 'the child to write to the terminal')
    expect(stateOf(s.node)?.tpgid).toBe(s.pgrp)
    t.type('\x03') // to the host's group: the host dies of it (no handler), its child by the death signal
    await waitFor(() => isGone(s.node) && isGone(s.child), 10_000, 'the host (SIGINT) and its child (death signal) to be gone')
    await finish(t.term, null)
  })

  it('foreground: false keeps the child a background job: reading the terminal stops it (SIGTTIN)', async () => {
    const t = underTerminal('read x; echo got:$x', { FG: '0' })
    const s = await started(t)
    await waitFor(() => stateOf(s.child)?.state === 'T', 10_000, 'the child to be stopped by SIGTTIN')
    expect(stateOf(s.node)?.tpgid).toBe(s.pgrp)
    process.kill(-s.child, 'SIGKILL') // our test's own child group, held by its unreaped leader
    expect(await t.next('child-exit')).toMatchObject({ code: null, signal: 'SIGKILL' })
    t.type('back\n')
    expect(await t.next('node-read')).toMatchObject({ line: 'back' })
    await finish(t.term, s)
  })
})
