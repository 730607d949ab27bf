// The `reapkit` command's signal conventions against those of tini and dumb-init (issue 19 item 5):
// a stopped command is continued by the stop, what the caller ignored or blocked reaches the
// command, SIGCONT is passed on, a repeated stop request counts whatever its signal, and the wrapper does
// not keep its starting folder busy. Every
// wrapper runs in a group of its own that the cleanup kills; its command leads the group it makes.
import { mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { childrenOf, exitOf, procStat, ROOT, spawnGroup, trackGroup, waitFor } from './helpers'

const BIN = join(ROOT, 'bin', 'reapkit')
const linux = process.platform === 'linux'

/** The wrapper's command (its only child), once started; tracked for the cleanup. */
async function commandOf(wrapper: number): Promise<number> {
  let pid = 0
  await waitFor(() => (pid = childrenOf(wrapper)[0] ?? 0) > 0, 10_000, 'the command to start')
  trackGroup(pid)
  return pid
}

const state = (pid: number) => procStat(pid)?.[0] ?? 'gone'

/**
 * The command is `sh` and has set its trap on SIGTERM. Its name first: before its exec the child
 * is still a copy of the wrapper, whose own handlers also show SIGTERM as caught.
 */
function trapsTerm(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'sh' && (maskOf(pid, 'SigCgt') & bit(15)) !== 0n
  } catch {
    return false
  }
}

/** A field of /proc/PID/status as a bit mask (SigIgn, SigBlk, ...). */
function maskOf(pid: number, field: string): bigint {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(`${field}:`))
  return BigInt(`0x${line!.split(/\s+/)[1]}`)
}
const bit = (signo: number) => 1n << BigInt(signo - 1)

describe.runIf(linux)('reapkit -- command: signal conventions', () => {
  it('a command stopped by SIGTSTP is continued by the stop, so it leaves on SIGTERM at once instead of at SIGKILL', async () => {
    const script = 'trap "exit 0" TERM; while :; do sleep 0.05; done'
    const wrapper = spawnGroup(BIN, ['--grace', '20000', '--', 'sh', '-c', script])
    const cmd = await commandOf(wrapper.pid!)
    // Its trap is set (SIGTERM caught): before that, a SIGTERM ends it by the default action (143),
    // which says nothing about the SIGCONT (a loaded machine, or the sanitizer run, shows it).
    await waitFor(() => trapsTerm(cmd), 10_000, 'the command to trap SIGTERM')
    process.kill(cmd, 'SIGTSTP')
    await waitFor(() => state(cmd) === 'T', 10_000, 'the command to stop')
    const t0 = Date.now()
    process.kill(wrapper.pid!, 'SIGTERM')
    // Without the SIGCONT the command cannot run its trap: the wrapper waits out the 20 s grace and
    // then SIGKILLs it (exit 137).
    expect(await exitOf(wrapper, 15_000)).toEqual({ code: 0, signal: null })
    expect(Date.now() - t0).toBeLessThan(15_000)
  })

  it('what the caller ignored and blocked reaches the command (nohup, a `cmd &` of sh), the stop signals excepted; SIGHUP then stops nothing', async () => {
    // perl stands in for nohup plus a blocked mask: SIGHUP and SIGINT ignored, SIGUSR1 and SIGTERM blocked.
    const perl = 'use POSIX; $SIG{HUP} = "IGNORE"; $SIG{INT} = "IGNORE"; sigprocmask(SIG_BLOCK, POSIX::SigSet->new(SIGUSR1, SIGTERM)); exec @ARGV or die'
    const wrapper = spawnGroup('perl', ['-e', perl, BIN, '--', 'sleep', '1000'])
    const cmd = await commandOf(wrapper.pid!)
    await waitFor(() => readFileSync(`/proc/${cmd}/comm`, 'utf8').trim() === 'sleep', 10_000, 'the command to exec')
    const ignored = maskOf(cmd, 'SigIgn')
    expect(ignored & bit(1), 'SIGHUP ignored').toBe(bit(1))
    expect(ignored & bit(2), 'SIGINT ignored').toBe(bit(2))
    expect(ignored & bit(15), 'SIGTERM not ignored').toBe(0n)
    expect(maskOf(cmd, 'SigBlk') & bit(10), 'SIGUSR1 blocked').toBe(bit(10))
    // A blocked SIGTERM would turn every graceful stop into a SIGKILL: the stop signals are unblocked.
    expect(maskOf(cmd, 'SigBlk') & bit(15), 'SIGTERM not blocked').toBe(0n)
    // The wrapper keeps the caller's ignore too: a SIGHUP ends neither it nor the command.
    process.kill(wrapper.pid!, 'SIGHUP')
    await new Promise((r) => setTimeout(r, 300))
    expect(wrapper.exitCode).toBe(null)
    expect(state(cmd)).not.toBe('gone')
    process.kill(wrapper.pid!, 'SIGTERM')
    expect(await exitOf(wrapper, 15_000)).toEqual({ code: 128 + 15, signal: null })
  })

  it('SIGCONT to the wrapper continues the command\'s group', async () => {
    const wrapper = spawnGroup(BIN, ['--', 'sleep', '1000'])
    const cmd = await commandOf(wrapper.pid!)
    await waitFor(() => readFileSync(`/proc/${cmd}/comm`, 'utf8').trim() === 'sleep', 10_000, 'the command to exec')
    process.kill(cmd, 'SIGSTOP')
    await waitFor(() => state(cmd) === 'T', 10_000, 'the command to stop')
    process.kill(wrapper.pid!, 'SIGCONT')
    await waitFor(() => state(cmd) === 'S', 10_000, 'the command to be continued')
    process.kill(wrapper.pid!, 'SIGTERM')
    expect(await exitOf(wrapper, 15_000)).toEqual({ code: 128 + 15, signal: null })
  })

  it('once the command runs, the wrapper leaves the starting folder (it could not be unmounted otherwise); the command keeps it', async () => {
    const start = mkdtempSync(join(tmpdir(), 'reapkit-cwd-'))
    try {
      const wrapper = spawnGroup(BIN, ['--', 'sleep', '1000'], { cwd: start })
      const cmd = await commandOf(wrapper.pid!)
      await waitFor(() => readlinkSync(`/proc/${wrapper.pid}/cwd`) === '/', 10_000, 'the wrapper to leave the folder')
      expect(readlinkSync(`/proc/${cmd}/cwd`)).toBe(start)
      process.kill(wrapper.pid!, 'SIGTERM')
      expect(await exitOf(wrapper, 15_000)).toEqual({ code: 128 + 15, signal: null })
    } finally {
      rmSync(start, { recursive: true, force: true })
    }
  })

  it('during a stop, a repeated fault-type request (SIGABRT) is passed on as the stop signal, as a repeated SIGTERM is', async () => {
    const log = join(tmpdir(), `reapkit-cli-signals-${process.pid}-${Date.now()}`)
    const script = `trap "echo TERM >> ${log}" TERM; while :; do sleep 0.05; done`
    const wrapper = spawnGroup(BIN, ['--grace', '1500', '--', 'sh', '-c', script])
    const cmd = await commandOf(wrapper.pid!)
    await waitFor(() => trapsTerm(cmd), 10_000, 'the command to trap SIGTERM')
    const terms = () => {
      try {
        return readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).length
      } catch {
        return 0
      }
    }
    process.kill(wrapper.pid!, 'SIGTERM')
    await waitFor(() => terms() === 1, 10_000, 'the first SIGTERM')
    process.kill(wrapper.pid!, 'SIGABRT')
    await waitFor(() => terms() === 2, 10_000, 'the SIGABRT passed on as SIGTERM')
    // The grace was not restarted: SIGKILL at its end (the trap ignores TERM).
    expect(await exitOf(wrapper, 15_000)).toEqual({ code: 128 + 9, signal: null })
    rmSync(log, { force: true })
  })
})
