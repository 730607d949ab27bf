// fork() on reapkit's spawn (issue 32 item 2): Node's fork (the IPC channel, execArgv, silent,
// stdio), with the child in its own group and the kernel's death signal (test/exec.test.ts kills a
// fork's host), and a timeout or an abort that ends the group, not only the child.
import { ChildProcess, fork as nodeFork } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import { fork, type ForkOptions, getpgid, spawnedInfo } from '../lib/index'
import { exitOf, FIXTURES, isGone, trackGroup, waitFor } from './helpers'

const linux = process.platform === 'linux'
const FORKED = join(FIXTURES, 'forked.cjs')

interface Reply {
  argv: string[]
  execArgv: string[]
  pid: number
  pgrp: number
  grandchild?: number
  echo: unknown
}

/** fork(), its child's group ended by the cleanup if the test fails (either overload: args, or options alone). */
function forked(modulePath: string | URL, ...rest: [options?: ForkOptions] | [args?: readonly string[], options?: ForkOptions]): ChildProcess {
  const args = [modulePath, ...rest]
  const child = (fork as (...a: unknown[]) => ChildProcess)(...args)
  if (child.pid) trackGroup(child.pid)
  return child
}

function ask(child: ChildProcess, message: unknown): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no reply within 10 s')), 10_000)
    child.once('message', (m) => {
      clearTimeout(timer)
      resolve(m as Reply)
    })
    child.send(message as never)
  })
}

describe.runIf(linux)('fork', () => {
  it('has Node\'s IPC channel, in its own group, with the death signal armed; args reach the module', async () => {
    const child = forked(FORKED, ['one', 'two'], { stdio: 'ignore' })
    expect(spawnedInfo(child)).toMatchObject({ pgid: child.pid, parentDeathSignal: 'SIGKILL', startup: 'exec' })
    const reply = await ask(child, { hello: [1, 2] })
    expect(reply).toMatchObject({ argv: ['one', 'two'], pid: child.pid, pgrp: child.pid, echo: { hello: [1, 2] } })
    expect(getpgid(child.pid!)).not.toBe(getpgid(0))
    child.disconnect()
    expect(await exitOf(child)).toEqual({ code: 0, signal: null })
  })

  it('execArgv: process.execArgv by default, the given ones otherwise; a file: URL names the module', async () => {
    const mine = forked(pathToFileURL(FORKED), { stdio: 'ignore', execArgv: ['--max-old-space-size=64', '--no-warnings'] })
    expect((await ask(mine, 'x')).execArgv).toEqual(['--max-old-space-size=64', '--no-warnings'])
    mine.disconnect()
    const inherited = forked(FORKED, { stdio: 'ignore' })
    expect((await ask(inherited, 'x')).execArgv).toEqual(process.execArgv)
    inherited.disconnect()
    await Promise.all([exitOf(mine), exitOf(inherited)])
  })

  it('silent: stdout and stderr are pipes; serialization "advanced" carries what JSON cannot', async () => {
    const child = forked(FORKED, ['--print'], { silent: true, serialization: 'advanced' })
    let out = ''
    child.stdout!.on('data', (d) => (out += d))
    const reply = await ask(child, new Map([['k', 1n]]))
    expect(reply.echo).toEqual(new Map([['k', 1n]]))
    child.disconnect()
    await exitOf(child)
    expect(out).toBe('printed by the child\n')
  })

  it('a stdio array without "ipc" is refused as Node refuses it, before anything runs', () => {
    expect(() => fork(FORKED, { stdio: ['pipe', 'pipe', 'pipe'] })).toThrow(expect.objectContaining({ code: 'ERR_CHILD_PROCESS_IPC_REQUIRED' }))
    const printed = (f: typeof fork | typeof nodeFork) => {
      try {
        f(FORKED, { stdio: ['pipe', 'pipe', 'pipe'] })
      } catch (err) {
        return String(err)
      }
      return 'no error'
    }
    expect(printed(fork)).toBe(printed(nodeFork)) // Error [ERR_CHILD_PROCESS_IPC_REQUIRED]: Forked processes must have...
    expect(printed(fork)).toMatch(/^Error \[ERR_CHILD_PROCESS_IPC_REQUIRED\]: /)
    expect(() => fork(FORKED, 'nope' as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
    expect(() => fork(FORKED, { timeout: -1 })).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }))
  })

  it('timeout: the child gets killSignal, and so does what it started in its group', async () => {
    const child = forked(FORKED, { stdio: 'ignore', timeout: 3000, killSignal: 'SIGINT' })
    const { grandchild } = await ask(child, 'spawn')
    expect(getpgid(grandchild!)).toBe(child.pid)
    expect(await exitOf(child)).toEqual({ code: null, signal: 'SIGINT' })
    await waitFor(() => isGone(grandchild!), 10_000, `the grandchild ${grandchild} gone`)
  })

  it('an abort: an AbortError as Node emits it, and the group ends', async () => {
    const ac = new AbortController()
    const child = forked(FORKED, { stdio: 'ignore', signal: ac.signal })
    const error = new Promise<Error>((resolve) => child.once('error', resolve))
    const { grandchild } = await ask(child, 'spawn')
    ac.abort()
    expect(await error).toMatchObject({ name: 'AbortError' })
    expect(await exitOf(child)).toEqual({ code: null, signal: 'SIGTERM' })
    await waitFor(() => isGone(grandchild!), 10_000, `the grandchild ${grandchild} gone`)
  })
})
