// A host that reads its terminal while its child holds it (issue 32 item 3). spawn() hands the
// terminal to a child that inherits it (terminal-foreground.test.ts); the host is then in the
// background, where the kernel answers its reads with EIO when its group is orphaned (the host
// leads its own session, as under `script -c`: Node's stdin emitted an unhandled `Error: read EIO`
// and the host exited 1) or stops it with SIGTTIN otherwise (under a shell's job control: the shell
// reported the host Stopped, exit 149). A shell never reads while its foreground job runs; nor does
// the host now (lib/mechanisms/terminal-reads.ts): its reads wait, the job reads what is typed,
// and the host reads again once the terminal is back. Each arrangement under a real pty
// (util-linux `script`); the host is test/fixtures/terminal-reads.cjs.
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { exitOf, FIXTURES, isGone, jsonLines, procStat, spawnFixture, spawnGroup, trackGroup, waitFor } from './helpers'

const linux = process.platform === 'linux'
const canScript = linux && spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0
const canBash = linux && spawnSync('bash', ['--version'], { stdio: 'ignore' }).status === 0
const HOST = join(FIXTURES, 'terminal-reads.cjs')
const OWNER = join(FIXTURES, 'terminal-reads-owner.cjs')
// The child waits a moment before it reads, so that the line is typed while only the host could
// take it: without the hold, the host's read came first (and failed); with it, the child reads it.
const CHILD = 'sleep 1; read line; echo child-read:$line'

/**
 * `command` (a shell line) under a fresh pty: its output, JSON events, and a way to type. `script`
 * runs the line with $SHELL: bash execs a lone command, dash (/bin/sh, and `script`'s choice when
 * SHELL is unset, as on CI) does not, so the lines below say `exec` where the host must lead the
 * session, and SHELL is fixed so that every machine runs the same arrangement.
 */
function underTerminal(command: string, env: NodeJS.ProcessEnv) {
  const term = spawnGroup('script', ['-qfec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'], env: { CHILD, ...env, SHELL: '/bin/sh' } })
  let out = ''
  term.stdout!.setEncoding('utf8')
  term.stdout!.on('data', (d: string) => (out += d))
  const events = () => out.split(/\r?\n/).filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>)
  const next = async (event: string, timeoutMs = 10_000) => {
    await waitFor(() => events().some((e) => e.event === event), timeoutMs, `${event} (terminal so far: ${JSON.stringify(out)})`)
    return events().find((e) => e.event === event)!
  }
  return { term, out: () => out, events, next, type: (s: string) => term.stdin!.write(s) }
}

async function hostReadsAfterTheJob(t: ReturnType<typeof underTerminal>) {
  const s = (await t.next('started')) as { node: number; pgrp: number; sid: number; child: number; tty: boolean }
  trackGroup(s.pgrp)
  trackGroup(s.child)
  expect(s.tty).toBe(true)
  t.type('first\n') // while the child holds the terminal and the host is reading
  await waitFor(() => t.out().includes('child-read:first'), 10_000, `the child to read the line (terminal: ${JSON.stringify(t.out())})`)
  expect(await t.next('child-exit')).toMatchObject({ code: 0, signal: null })
  t.type('quit\n')
  expect(await t.next('node-read')).toMatchObject({ line: 'quit', childRunning: false })
  // The host never took the child's line, and nothing failed.
  expect(t.events().filter((e) => e.event === 'node-read').map((e) => e.line)).toEqual(['quit'])
  expect(t.out()).not.toContain('EIO')
  await waitFor(() => isGone(s.node) && isGone(s.child), 10_000, 'the host and its child gone')
  return s
}

describe.runIf(canScript)('a host reading the terminal while its foreground child runs', () => {
  for (const early of [false, true]) {
    const when = early ? 'reading from before the spawn' : 'starting to read after the spawn'
    it(`the host leads its own session (script -c; its group orphaned, EIO before), ${when}`, async () => {
      const t = underTerminal(`exec "${process.execPath}" "${HOST}"`, { EARLY: early ? '1' : '0' })
      const s = await hostReadsAfterTheJob(t)
      expect(s.sid).toBe(s.node) // the session leader
      expect(await exitOf(t.term, 10_000)).toEqual({ code: 0, signal: null }) // script -e: the host's status
    })

    it.runIf(canBash)(`the host is a shell's foreground job (bash, set -m; SIGTTIN stopped it before), ${when}`, async () => {
      const t = underTerminal(`bash -c 'set -m; "${process.execPath}" "${HOST}"; echo bash-saw:$?'`, { EARLY: early ? '1' : '0' })
      const s = await hostReadsAfterTheJob(t)
      expect(s.sid).not.toBe(s.node) // bash leads the session; the host leads a job of it
      expect(s.pgrp).toBe(s.node)
      await waitFor(() => t.out().includes('bash-saw:'), 10_000, `bash to report the host (terminal: ${JSON.stringify(t.out())})`)
      expect(t.out()).toContain('bash-saw:0')
      expect(await exitOf(t.term, 10_000)).toEqual({ code: 0, signal: null })
    })
  }

  it('Ctrl-Z: after fg, the job has the terminal again and the reads of the host wait again (the job gets the lines)', async () => {
    const t = underTerminal(`exec "${process.execPath}" "${HOST}"`, { EARLY: '1', CHILD: 'read x; echo got:$x; read y; echo got:$y' })
    const s = (await t.next('started')) as { node: number; pgrp: number; child: number }
    trackGroup(s.pgrp)
    trackGroup(s.child)
    const state = (pid: number) => procStat(pid)?.[0]
    await waitFor(() => state(s.child) === 'S', 10_000, 'the child to wait in read')
    t.type('\x1a')
    await waitFor(() => state(s.node) === 'T' && state(s.child) === 'T', 10_000, 'the child and the host stopped')
    // fg, as terminal-foreground.test.ts does it: SIGCONT to script's group and to the host.
    process.kill(-t.term.pid!, 'SIGCONT')
    process.kill(s.node, 'SIGCONT')
    await waitFor(() => state(s.child) === 'S' && Number(procStat(s.node)?.[5]) === s.child, 10_000, 'the child in the foreground again')
    t.type('one\n')
    await waitFor(() => t.out().includes('got:one'), 10_000, `the child to read (terminal: ${JSON.stringify(t.out())})`)
    t.type('two\n')
    expect(await t.next('child-exit')).toMatchObject({ code: 0, signal: null })
    expect(t.out()).toContain('got:two')
    t.type('quit\n')
    expect(await exitOf(t.term, 10_000)).toEqual({ code: 0, signal: null })
    expect(t.events().filter((e) => e.event === 'node-read').map((e) => e.line)).toEqual(['quit'])
  })

  it('fork() hands no terminal over by default: the host keeps it and reads while its worker runs', async () => {
    const t = underTerminal(`exec "${process.execPath}" "${HOST}"`, { FORK: '1' })
    const s = (await t.next('started')) as { node: number; pgrp: number; child: number; tty: boolean }
    trackGroup(s.pgrp)
    trackGroup(s.child)
    expect(s.tty).toBe(true)
    t.type('first\n')
    await waitFor(() => t.events().some((e) => e.event === 'node-read'), 10_000, `the host to read (terminal: ${JSON.stringify(t.out())})`)
    expect(t.events().find((e) => e.event === 'node-read')).toMatchObject({ line: 'first', childRunning: true })
    t.type('quit\n')
    expect(await exitOf(t.term, 10_000)).toEqual({ code: 0, signal: null })
    await waitFor(() => isGone(s.node) && isGone(s.child), 10_000, 'the host and its worker gone')
  })

  it('a fork()ed worker that reads the terminal is stopped by SIGTTIN: a warning says so (it hung silently before)', async () => {
    const t = underTerminal(`"${process.execPath}" "${join(FIXTURES, 'fork-terminal-host.cjs')}"`, {})
    const s = (await t.next('started')) as { node: number; worker: number }
    trackGroup(s.node)
    trackGroup(s.worker)
    // The worker's read waits for input (libuv polls first): the line typed is what it reads, and
    // reading it from the background is what stops it.
    t.type('first\n')
    const warning = (await t.next('warning')) as { code: string; message: string; workerState: string }
    expect(warning).toMatchObject({ code: 'REAPKIT_BACKGROUND_TERMINAL_STOP', workerState: 'T' })
    expect(warning.message).toContain(`(pid ${s.worker}) is stopped by SIGTTIN: it read the terminal`)
    expect(warning.message).toContain('forked-reads.cjs')
    expect(await t.next('worker-exit')).toMatchObject({ signal: 'SIGKILL' })
    expect(await exitOf(t.term, 10_000)).toEqual({ code: 0, signal: null })
    expect(t.events().filter((e) => e.event === 'warning')).toHaveLength(1)
    await waitFor(() => isGone(s.node) && isGone(s.worker), 10_000, 'the host and its worker gone')
  })

  it('no terminal (stdin a pipe): nothing is handed over or held; the host reads while the child runs', async () => {
    const host = spawnFixture('terminal-reads.cjs', [], { stdio: ['pipe', 'pipe', 'inherit'], env: { CHILD: 'sleep 30' } })
    const lines = jsonLines(host.stdout!)
    const s = await lines.next((m) => m.event === 'started')
    trackGroup(s.child)
    expect(s.tty).toBe(false)
    host.stdin!.write('first\n')
    expect(await lines.next((m) => m.event === 'node-read')).toMatchObject({ line: 'first', childRunning: true })
    host.stdin!.write('quit\n')
    expect(await exitOf(host)).toEqual({ code: 0, signal: null })
    await waitFor(() => isGone(s.child), 10_000, 'the child gone')
  })
})

// What the host's own code did with its stdin before the hand-over decides what happens after it:
// a stream its owner paused or closed stays so (the host exits when nothing else keeps it alive, as
// with Node's spawn), one read with 'readable' reads again, and one unref'd is held too. The host
// is test/fixtures/terminal-reads-owner.cjs, under `script -c` (its group orphaned: a read from
// the background fails with EIO there).
describe.runIf(canScript)('the host stream as its owner left it', () => {
  const host = (mode: string, child?: string) => underTerminal(`"${process.execPath}" "${OWNER}"`, { MODE: mode, ...(child ? { CHILD: child } : {}) })
  async function started(t: ReturnType<typeof underTerminal>) {
    const s = (await t.next('started')) as { node: number; pgrp: number; child: number; tty: boolean }
    trackGroup(s.pgrp)
    trackGroup(s.child)
    expect(s.tty).toBe(true)
    return s
  }

  it('readline: question, close, then a child on the terminal; the host exits after the child (it read again for ever before)', async () => {
    const t = host('readline', 'sleep 1; echo editor-done')
    await waitFor(() => t.out().includes('name? '), 10_000, `the prompt (terminal: ${JSON.stringify(t.out())})`)
    t.type('bob\n')
    const s = await started(t)
    expect(await t.next('child-exit')).toMatchObject({ code: 0, signal: null })
    expect(await exitOf(t.term, 10_000)).toEqual({ code: 0, signal: null })
    expect(t.events().find((e) => e.event === 'host-exit')).toMatchObject({ code: 0 })
    expect(t.out()).toContain('editor-done')
    expect(isGone(s.node)).toBe(true)
  })

  it('pause() and a spawn in the same tick: the host exits after the child', async () => {
    const t = host('pause', 'sleep 1')
    const s = await started(t)
    expect(await t.next('child-exit')).toMatchObject({ code: 0, signal: null })
    expect(await exitOf(t.term, 10_000)).toEqual({ code: 0, signal: null })
    expect(t.events().find((e) => e.event === 'host-exit')).toMatchObject({ code: 0 })
    expect(isGone(s.node)).toBe(true)
  })

  it("an unref'd stdin that reads is held too: the child reads the line, no EIO, the host exits after the child", async () => {
    const t = host('unref')
    const s = await started(t)
    t.type('first\n')
    await waitFor(() => t.out().includes('child-read:first'), 10_000, `the child to read the line (terminal: ${JSON.stringify(t.out())})`)
    expect(await t.next('child-exit')).toMatchObject({ code: 0, signal: null })
    expect(await exitOf(t.term, 10_000)).toEqual({ code: 0, signal: null })
    expect(t.out()).not.toContain('EIO')
    expect(t.events().filter((e) => e.event === 'node-read')).toEqual([])
    expect(isGone(s.node)).toBe(true)
  })

  it('no process._getActiveHandles(): one warning, and process.stdin is held all the same', async () => {
    const t = host('nolist')
    const s = await started(t)
    t.type('first\n')
    await waitFor(() => t.out().includes('child-read:first'), 10_000, `the child to read the line (terminal: ${JSON.stringify(t.out())})`)
    expect(await t.next('child-exit')).toMatchObject({ code: 0, signal: null })
    t.type('quit\n')
    expect(await t.next('node-read')).toMatchObject({ line: 'quit', childRunning: false })
    expect(await exitOf(t.term, 10_000)).toEqual({ code: 0, signal: null })
    expect(t.out().match(/REAPKIT_TERMINAL_READS/g)).toHaveLength(1)
    expect(t.out()).not.toContain('EIO')
    expect(isGone(s.node)).toBe(true)
  })

  it.runIf(linux)('a host that never touched process.stdin: the hold does not create it (fd 0 stays blocking)', async () => {
    const t = host('untouched', 'sleep 0.5')
    const s = await started(t)
    expect(await t.next('fd0')).toEqual({ event: 'fd0', nonblocking: false })
    expect(await exitOf(t.term, 10_000)).toEqual({ code: 0, signal: null })
    expect(isGone(s.node)).toBe(true)
  })

  it("a stdin read with 'readable' and read() reads again after the child", async () => {
    const t = host('readable')
    const s = await started(t)
    t.type('first\n')
    await waitFor(() => t.out().includes('child-read:first'), 10_000, `the child to read the line (terminal: ${JSON.stringify(t.out())})`)
    expect(await t.next('child-exit')).toMatchObject({ code: 0, signal: null })
    t.type('quit\n')
    expect(await t.next('node-read')).toMatchObject({ line: 'quit', childRunning: false })
    expect(await exitOf(t.term, 10_000)).toEqual({ code: 0, signal: null })
    expect(t.events().filter((e) => e.event === 'node-read').map((e) => e.line)).toEqual(['quit'])
    expect(isGone(s.node)).toBe(true)
  })
})
