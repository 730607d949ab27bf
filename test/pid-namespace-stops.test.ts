// spawn({ pidNamespace: true }): job-control stops and the child's stdio, as the host sees them
// through the helper (native/exec_pidns.c). The command leads a session of its own under the
// namespace's init, so its group is orphaned: the kernel discards a SIGTSTP it leaves to the default
// action, and the init must stop it itself. The helper and the init must keep no copy of its fds.
import { afterEach, describe, expect, it } from 'vitest'
import { capabilities, spawn } from '../lib/index'
import { execHelperPath } from '../lib/ground/native'
import { childrenOf, exitOf, killAllGroups, procStat, waitFor } from './helpers'

const linux = process.platform === 'linux'
const available = linux && execHelperPath() !== null && capabilities().pidNamespace.available

/** Ends a child as a stop does: SIGCONT (it may be stopped) then SIGTERM, which the init passes to
 * the whole namespace, so that the init ends before the helper (a SIGKILL to the helper alone leaves
 * the init to die a moment later, after the helper's exit). SIGKILL if that does not do. */
async function end(child: ReturnType<typeof spawn>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGCONT')
  child.kill('SIGTERM')
  await exitOf(child, 5000).catch(async () => {
    child.kill('SIGKILL')
    await exitOf(child, 5000).catch(() => {})
  })
}

const children = new Set<ReturnType<typeof spawn>>()
afterEach(async () => {
  for (const child of children) await end(child)
  children.clear()
  expect(await killAllGroups()).toEqual([])
})

function track<T extends ReturnType<typeof spawn>>(child: T): T {
  if (child.pid !== undefined) children.add(child)
  return child
}

const state = (pid: number): string | undefined => procStat(pid)?.[0]

/** The command's pid as we see it (the init's first child), once it runs PROGRAM. */
async function commandOf(helper: number, program: string): Promise<number> {
  let command = 0
  await waitFor(() => {
    const init = childrenOf(helper)[0]
    command = init === undefined ? 0 : childrenOf(init)[0] ?? 0
    try {
      return command > 0 && require('node:fs').readFileSync(`/proc/${command}/comm`, 'utf8').trim() === program
    } catch {
      return false
    }
  }, 10_000, `the command ${program} under helper ${helper}`)
  return command
}

describe.skipIf(!available)('spawn({ pidNamespace }): job-control stops', () => {
  it('a SIGTSTP to the helper stops the command too (not only the helper); SIGCONT runs both again', async () => {
    const child = track(spawn('sleep', ['30'], { pidNamespace: true, stdio: 'ignore' }))
    const command = await commandOf(child.pid!, 'sleep')
    process.kill(child.pid!, 'SIGTSTP')
    await waitFor(() => state(child.pid!) === 'T', 10_000, 'the helper stopped')
    await waitFor(() => state(command) === 'T', 10_000, 'the command stopped (its own group is orphaned: the kernel drops a default SIGTSTP)')
    process.kill(child.pid!, 'SIGCONT')
    await waitFor(() => state(command) !== 'T' && state(child.pid!) !== 'T', 10_000, 'both running again')
    expect(child.exitCode).toBe(null)
  })

  it('SIGTTIN and SIGTTOU stop it the same way', async () => {
    for (const sig of ['SIGTTIN', 'SIGTTOU'] as const) {
      const child = track(spawn('sleep', ['30'], { pidNamespace: true, stdio: 'ignore' }))
      const command = await commandOf(child.pid!, 'sleep')
      process.kill(child.pid!, sig)
      await waitFor(() => state(command) === 'T', 10_000, `the command stopped by ${sig}`)
      await end(child)
    }
  })

  it('a command with a SIGTSTP handler gets the signal itself, and is not stopped for it', async () => {
    // The shell's trap says "got" and goes on: a program that cleans up before it stops itself.
    const child = track(spawn('sh', ['-c', 'trap "echo got" TSTP; echo ready; while :; do sleep 0.05; done'], { pidNamespace: true, stdio: ['ignore', 'pipe', 'inherit'] }))
    let out = ''
    child.stdout!.on('data', (d: Buffer) => (out += String(d)))
    await waitFor(() => out.includes('ready\n'), 10_000, 'ready')
    const command = childrenOf(childrenOf(child.pid!)[0]!)[0]!
    process.kill(child.pid!, 'SIGTSTP')
    await waitFor(() => out.includes('got\n'), 10_000, "the command's own handler")
    expect(state(command)).not.toBe('T')
  })

  it('a command that ends while the helper is stopped: the host sees its exit, with its code, without a SIGCONT', async () => {
    // It ignores SIGTSTP (the stop is not taken), and exits 5 a moment later; the helper stopped itself.
    const child = track(spawn('sh', ['-c', 'trap "" TSTP; echo ready; sleep 1; exit 5'], { pidNamespace: true, stdio: ['ignore', 'pipe', 'inherit'] }))
    await new Promise<void>((resolve) => child.stdout!.on('data', (d: Buffer) => String(d).includes('ready') && resolve()))
    process.kill(child.pid!, 'SIGTSTP')
    await waitFor(() => state(child.pid!) === 'T' || child.exitCode !== null, 10_000, 'the helper stopped')
    expect(await exitOf(child, 10_000)).toEqual({ code: 5, signal: null })
  })
})

describe.skipIf(!available)("spawn({ pidNamespace }): the command's stdio and IPC are its own", () => {
  it("a command that closes its stdout and lives on: 'end' comes at the close, before it is done", async () => {
    // Its last word, on stderr, marks the end of its life: 'end' must come before it, not at the exit.
    const child = track(spawn('sh', ['-c', 'echo hi; exec >&- <&-; sleep 2; echo bye >&2'], { pidNamespace: true, stdio: ['pipe', 'pipe', 'pipe'] }))
    const order: string[] = []
    child.stdout!.on('data', () => {})
    child.stdout!.on('end', () => order.push('end'))
    child.stderr!.on('data', (d: Buffer) => String(d).includes('bye') && order.push('bye'))
    child.stdin!.on('error', () => {})
    await exitOf(child, 15_000)
    expect(order).toEqual(['end', 'bye'])
  })

  it("a child that disconnects its IPC channel and lives on: 'disconnect' comes at once, before it is done", async () => {
    const script = "process.disconnect(); setTimeout(() => process.stderr.write('bye'), 2000)"
    const child = track(spawn(process.execPath, ['-e', script], { pidNamespace: true, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] }))
    const order: string[] = []
    child.once('disconnect', () => order.push('disconnect'))
    child.stderr!.on('data', (d: Buffer) => String(d).includes('bye') && order.push('bye'))
    await exitOf(child, 15_000)
    expect(order).toEqual(['disconnect', 'bye'])
  })

  it('the helper and the init hold nothing but /dev/null on 0-2 and their own pipes', async () => {
    const child = track(spawn('sleep', ['30'], { pidNamespace: true, stdio: ['pipe', 'pipe', 'pipe'] }))
    const command = await commandOf(child.pid!, 'sleep')
    const init = childrenOf(child.pid!)[0]!
    const { readdirSync, readlinkSync } = await import('node:fs')
    // An fd listed and closed before its readlink (the command's exec closes its close-on-exec fds
    // just after the kernel gave it its new name, which commandOf waits for) is not held: skipped.
    const fds = (pid: number) =>
      readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
        try {
          return [[Number(fd), readlinkSync(`/proc/${pid}/fd/${fd}`)] as const]
        } catch {
          return []
        }
      })
    const commandPipes = new Set(fds(command).filter(([fd]) => fd <= 2).map(([, target]) => target))
    expect(commandPipes.size).toBe(3)
    // Each drops them just after its fork: the command may run before they have (bounded wait).
    const clean = (pid: number) => {
      const held = fds(pid)
      return held.every(([fd, target]) => (fd > 2 || target === '/dev/null') && !commandPipes.has(target)) && held.length <= 6 // 0-2, two pipes, a signalfd
    }
    await waitFor(() => clean(child.pid!) && clean(init), 10_000, 'the helper and the init to hold none of the child\'s descriptors')
    for (const pid of [child.pid!, init]) expect(fds(pid).filter(([fd]) => fd <= 2).map(([, target]) => target)).toEqual(['/dev/null', '/dev/null', '/dev/null'])
  })
})
