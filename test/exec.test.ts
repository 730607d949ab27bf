// exec() and execFile() on reapkit's spawn (issue 32 item 2): Node's calls, with the child in its
// own group and the kernel's death signal, and a timeout, a maxBuffer overflow or an abort that
// ends the whole group, not only the shell. Node's own tests for them run against these through
// scripts/node-tests/run.mjs (a Node source tree needed; see there).
import * as childProcess from 'node:child_process'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { exec, execFile, getpgid, spawn, spawnedInfo } from '../lib/index'
import { childrenOf, exitOf, groupMembers, isGone, jsonLines, spawnFixture, trackGroup, waitFor } from './helpers'

const linux = process.platform === 'linux'
type Result = { err: (Error & Record<string, unknown>) | null; stdout: string | Buffer; stderr: string | Buffer }

/** The callback's three values, once. */
function called(start: (cb: (err: Error | null, stdout: string | Buffer, stderr: string | Buffer) => void) => childProcess.ChildProcess) {
  let child!: childProcess.ChildProcess
  const done = new Promise<Result>((resolve) => {
    child = start((err, stdout, stderr) => resolve({ err: err as Result['err'], stdout, stderr }))
  })
  if (child.pid) trackGroup(child.pid)
  return { child, done }
}

/** Waits until `pgid` has at least `n` live members; returns them. */
async function members(pgid: number, n: number): Promise<number[]> {
  await waitFor(() => groupMembers(pgid).length >= n, 10_000, `${n} members in group ${pgid}`)
  return groupMembers(pgid)
}

describe.runIf(linux)('exec and execFile', () => {
  it('exec: the shell leads its own group with the death signal armed; stdout and stderr reach the callback', async () => {
    const { child, done } = called((cb) => exec('echo out; echo err >&2; sleep 0.2', cb))
    expect(getpgid(child.pid!)).toBe(child.pid)
    expect(spawnedInfo(child)).toMatchObject({ pgid: child.pid, parentDeathSignal: 'SIGKILL', startup: 'exec' })
    expect(await done).toEqual({ err: null, stdout: 'out\n', stderr: 'err\n' })
  })

  it('execFile: arguments as given (no shell), a failing command as Node reports it', async () => {
    const ok = called((cb) => execFile('printf', ['%s|', 'a b', '$HOME'], cb))
    expect((await ok.done).stdout).toBe('a b|$HOME|')
    const failed = await called((cb) => execFile('sh', ['-c', 'echo why >&2; exit 3'], cb)).done
    expect(failed.err).toMatchObject({ code: 3, killed: false, signal: null, cmd: 'sh -c echo why >&2; exit 3' })
    expect(failed.err!.message).toBe('Command failed: sh -c echo why >&2; exit 3\nwhy\n')
    const missing = await called((cb) => execFile('reapkit-no-such-command', cb)).done
    expect(missing.err).toMatchObject({ code: 'ENOENT', syscall: 'spawn reapkit-no-such-command', cmd: 'reapkit-no-such-command' })
  })

  it('util.promisify gives { stdout, stderr } and .child; a failure rejects with stdout and stderr on the error', async () => {
    const run = promisify(exec)
    const p = run('echo hi; echo there >&2')
    expect(p.child).toBeInstanceOf(childProcess.ChildProcess)
    expect(spawnedInfo(p.child)?.pgid).toBe(p.child.pid)
    expect(await p).toEqual({ stdout: 'hi\n', stderr: 'there\n' })
    await expect(promisify(execFile)('sh', ['-c', 'echo part; exit 2'])).rejects.toMatchObject({ code: 2, stdout: 'part\n', stderr: '' })
    // A bad argument throws at the call, as Node's does, rather than rejecting.
    expect(() => run('true', { timeout: -1 })).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }))
  })

  it('encoding: utf8 by default, any Buffer encoding, "buffer" (or null) for Buffers', async () => {
    const cmd = "printf '\\303\\251'"
    expect((await called((cb) => exec(cmd, cb)).done).stdout).toBe('é')
    expect((await called((cb) => exec(cmd, { encoding: 'hex' }, cb)).done).stdout).toBe('c3a9')
    expect((await called((cb) => exec(cmd, { encoding: 'latin1' }, cb)).done).stdout).toBe('Ã©')
    const raw = (await called((cb) => exec(cmd, { encoding: 'buffer' }, cb)).done).stdout
    expect(Buffer.isBuffer(raw) && raw.equals(Buffer.from([0xc3, 0xa9]))).toBe(true)
    expect(Buffer.isBuffer((await called((cb) => exec(cmd, { encoding: null }, cb)).done).stdout)).toBe(true)
  })

  it('timeout: ends the whole group (`sleep & sleep`), where Node\'s exec ends only the shell', async () => {
    const cmd = 'sleep 100 & sleep 100; true'
    const ours = called((cb) => exec(cmd, { timeout: 3000 }, cb))
    const before = await members(ours.child.pid!, 3) // the shell and both sleeps
    const { err } = await ours.done
    expect(err).toMatchObject({ killed: true, signal: 'SIGTERM', code: null })
    await waitFor(() => before.every(isGone), 10_000, `every member of ${before} gone`)

    // The same through Node's exec: the shell goes, the background sleep stays (cleaned up here).
    let nodeChild!: childProcess.ChildProcess
    const nodeDone = new Promise<Error | null>((resolve) => (nodeChild = childProcess.exec(cmd, { timeout: 3000 }, (e) => resolve(e))))
    await waitFor(() => childrenOf(nodeChild.pid!).length >= 2, 10_000, 'Node\'s exec running both sleeps')
    const sleeps = childrenOf(nodeChild.pid!)
    expect(getpgid(sleeps[0]!)).toBe(getpgid(0)) // Node's: in our own group
    expect(await nodeDone).toMatchObject({ killed: true, signal: 'SIGTERM' })
    try {
      await new Promise((r) => setTimeout(r, 200))
      expect(sleeps.filter((p) => !isGone(p)).length).toBeGreaterThan(0)
    } finally {
      for (const pid of sleeps) if (!isGone(pid)) process.kill(pid, 'SIGKILL')
      await waitFor(() => sleeps.every(isGone), 10_000, 'Node\'s leftovers gone')
    }
  })

  it('killSignal: the group gets it (SIGKILL here), and the callback says so', async () => {
    const ours = called((cb) => exec('trap "" TERM; sleep 100 & sleep 100; true', { timeout: 3000, killSignal: 'SIGKILL' }, cb))
    const before = await members(ours.child.pid!, 3)
    expect((await ours.done).err).toMatchObject({ killed: true, signal: 'SIGKILL' })
    await waitFor(() => before.every(isGone), 10_000, `every member of ${before} gone`)
  })

  it('maxBuffer: past it, the output is cut at maxBuffer bytes, the error is Node\'s, and the group ends', async () => {
    // The background sleep's pid is the output's first line.
    const cmd = 'sleep 100 & echo $!; yes'
    const ours = called((cb) => exec(cmd, { maxBuffer: 64 * 1024 }, cb))
    const { err, stdout } = await ours.done
    expect(err).toBeInstanceOf(RangeError)
    expect(err).toMatchObject({ code: 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER', message: 'stdout maxBuffer length exceeded', cmd })
    expect(stdout.length).toBe(64 * 1024)
    const sleep = Number(String(stdout).split('\n')[0])
    expect(sleep).toBeGreaterThan(1)
    await waitFor(() => isGone(sleep) && isGone(ours.child.pid!), 10_000, `the shell and its background sleep ${sleep} gone`)
    expect(groupMembers(ours.child.pid!)).toEqual([])
  })

  it('an abort (signal) ends the group; the callback gets an AbortError with the reason as cause', async () => {
    const ac = new AbortController()
    const ours = called((cb) => execFile('sh', ['-c', 'sleep 100 & sleep 100; true'], { signal: ac.signal }, cb))
    const before = await members(ours.child.pid!, 3)
    ac.abort('enough')
    const { err } = await ours.done
    expect(err).toMatchObject({ name: 'AbortError', cause: 'enough' })
    await waitFor(() => before.every(isGone), 10_000, `every member of ${before} gone`)
  })

  it('refuses bad arguments as Node does, before anything runs', () => {
    expect(() => exec(1 as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
    expect(() => exec('echo \u0000')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    expect(() => execFile('true', [], { maxBuffer: -1 })).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }))
    expect(() => execFile('true', [], { killSignal: 'SIGNOPE' as never })).toThrow(expect.objectContaining({ code: 'ERR_UNKNOWN_SIGNAL' }))
    expect(() => execFile('true', [], {}, 'nope' as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
    expect(() => execFile('true', [], { signal: {} as never })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
  })

  it("a NUL byte is named as the caller wrote it (args[i], options.argv0), in Node's very words", () => {
    const said = (call: () => unknown) => {
      try {
        call()
      } catch (err) {
        return String(err)
      }
      return 'no error'
    }
    type Lib = { spawn: (...args: unknown[]) => unknown; execFile: (...args: unknown[]) => unknown }
    const cases: Array<(lib: Lib) => unknown> = [
      (lib) => lib.execFile('true', ['a\u0000'], () => {}),
      (lib) => lib.spawn('true', ['b', 'a\u0000']),
      (lib) => lib.spawn('true', ['x', 'a\u0000'], { shell: true }),
      (lib) => lib.spawn('true', [], { argv0: 'x\u0000' }),
      (lib) => lib.spawn('tr\u0000ue'),
      (lib) => lib.spawn('true', [`${'a'.repeat(200)}\u0000`]),
    ]
    for (const call of cases) {
      const node = said(() => call(childProcess as unknown as Lib))
      expect(node).toMatch(/^TypeError \[ERR_INVALID_ARG_VALUE\]/)
      expect(said(() => call({ spawn, execFile } as unknown as Lib))).toBe(node)
    }
  })

  it('reads no option polluted onto Object.prototype (cwd, uid, shell), as Node reads none', async () => {
    const proto = Object.prototype as Record<string, unknown>
    proto.cwd = '/'
    proto.uid = 4242
    proto.shell = '/nonexistent-shell'
    try {
      const viaExec = called((cb) => exec('pwd', cb))
      const viaExecFile = called((cb) => execFile('pwd', cb))
      expect((await viaExec.done).stdout).toBe(`${process.cwd()}\n`)
      expect((await viaExecFile.done).stdout).toBe(`${process.cwd()}\n`)
    } finally {
      delete proto.cwd
      delete proto.uid
      delete proto.shell
    }
  })

  it('the package as built (exec a part of it, util.promisify through its stub): a timeout ends the group', async () => {
    const host = spawnFixture('exec-host.cjs', ['built'])
    const line = (await jsonLines(host.stdout!).next((m) => 'sleep' in m, 15_000)) as { sleep: number; killed: boolean; signal: string }
    expect(line).toMatchObject({ killed: true, signal: 'SIGTERM' })
    expect(line.sleep).toBeGreaterThan(1)
    await waitFor(() => isGone(line.sleep), 10_000, `the background sleep ${line.sleep} gone`)
    expect(await exitOf(host)).toEqual({ code: 0, signal: null })
  })

  for (const mode of ['exec', 'execFile', 'fork'] as const) {
    it(`${mode}: the child dies with its host when the host is SIGKILLed (the kernel's death signal)`, async () => {
      const host = spawnFixture('exec-host.cjs', [mode])
      const line = (await jsonLines(host.stdout!).next((m) => 'child' in m)) as { child: number; pgrp: number; deathSignal: string }
      trackGroup(line.pgrp)
      expect(line.pgrp).toBe(line.child)
      expect(line.deathSignal).toBe('SIGKILL')
      expect(isGone(line.child)).toBe(false)
      host.kill('SIGKILL')
      await exitOf(host)
      await waitFor(() => isGone(line.child), 10_000, `${mode}'s child ${line.child} gone after its host`)
    })
  }
})
