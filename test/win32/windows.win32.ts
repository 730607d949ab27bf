/**
 * `npm run test:win32`: reapkit's Windows primitives in a real node.exe under Wine, on real
 * Windows processes. Each fixture writes its results to a JSON file; survivors are counted from
 * Linux's /proc by the test's random tag. Every process started here is killed by pid in
 * afterEach (tagged), and the prefix's wineserver is stopped at the end.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { argvDump, engineCalls, killTagged, missing, newTag, winPath, runFixture, stopWineserver, tagged, type WineRun, waitFor } from './wine'

const started: string[] = []
function run(name: string, args: string[] = [], tag = newTag()): WineRun {
  started.push(tag)
  return runFixture(name, args, tag)
}

afterEach(() => {
  for (const tag of started.splice(0)) killTagged(tag)
})
afterAll(() => stopWineserver())

async function resultWith(r: WineRun, key: string, timeoutMs = 120_000): Promise<Record<string, any>> {
  let ended = false
  void r.exited.then(() => (ended = true))
  await waitFor(() => key in r.result() || 'error' in r.result() || ended, timeoutMs, `${key} in ${r.resultFile}`)
  await new Promise((res) => setTimeout(res, 100)) // a last write racing the exit
  expect(Object.keys(r.result()), `the fixture ended before '${key}': ${JSON.stringify(r.result())}`).toContain(key)
  const result = r.result()
  expect(result.error).toBeUndefined()
  return result
}

/**
 * The host's whole tree is up (each of `parts` in some tagged command line); the host is SIGKILLed
 * from Linux; every tagged process ends.
 */
async function hostKillEndsAll(r: WineRun, parts: string[], what: string): Promise<void> {
  const before = tagged(r.tag)
  for (const part of parts) expect(before.some((p) => p.cmdline.includes(part)), part).toBe(true)
  process.kill(r.pid, 'SIGKILL')
  await waitFor(() => tagged(r.tag).length === 0, 30_000, what)
}

// Never a silent skip. Run directly where Wine or what the win32 scripts make is missing (a fresh
// clone), the suite skips and says what is missing; under `npm run test:win32`, which makes all of
// it first, REAPKIT_WIN32_REQUIRED=1 turns the same lack into a failure.
if (missing !== null && process.env.REAPKIT_WIN32_REQUIRED === '1') throw new Error(missing)

describe.skipIf(missing !== null)(`Windows under Wine (node.exe + the win32-x64 prebuild)${missing ? ` (skipped: ${missing})` : ''}`, () => {
  it('exit watching, ESRCH, pinned handles, TerminateProcess, ENOTSUP', async () => {
    const tag = newTag()
    const pidFile = join(tmpdir(), `${tag}-other.pid`)
    const goFile = join(tmpdir(), `${tag}-other.go`)
    const nonChild = run('other.cjs', [winPath(pidFile), winPath(goFile)], tag)
    const r = run('primitives.cjs', [winPath(pidFile), winPath(goFile)], tag)
    const result = await resultWith(r, 'done')

    expect(result.caps).toMatchObject({ native: true, exitWatch: 'handle', parentWatch: 'handle', job: true, pidfd: false, pdeathsig: false, subreaper: false })
    // Our child's exit, by a wait on its handle, with its exit code.
    expect(result.childExit).toMatchObject({ code: 7, signal: null })
    // A node.exe the host did not start (Linux started it): seen exiting, with its code.
    expect(result.otherExit).toMatchObject({ pid: result.otherExit.expectedPid, code: 5, signal: null })
    expect(await nonChild.exited).toBe(5)
    // A gone pid: ESRCH from OpenProcess (Windows: ERROR_INVALID_PARAMETER), and watchExit says gone.
    expect(result.goneOpen).toMatchObject({ threw: true, code: 'ESRCH', syscall: 'OpenProcess' })
    expect(result.goneWatch).toMatchObject({ code: null, signal: null })
    // A handle outlives its process: it refuses to signal (ESRCH), its pid is not reused while it
    // is open, and after close() it says EBADF.
    expect(result.pinned.exit).toMatchObject({ code: 3 })
    expect(result.pinned.afterExit).toEqual({ SIGKILL: 'ESRCH', SIGTERM: 'ESRCH', 0: 'ESRCH' })
    expect(result.pinned.reused).toBe(false)
    expect(result.pinned.closed).toBe('EBADF')
    // SIGTERM through a handle is TerminateProcess(1): our watch sees code 1; Node's own 'exit'
    // of the same child agrees.
    expect(result.terminated.watched).toMatchObject({ code: 1, signal: null })
    expect(result.terminated.node.code).toBe(1)
    expect(result.unsupportedSignal).toBe('ENOSYS')
    // What Windows lacks: ENOTSUP with a message that says what to use instead.
    for (const [name, err] of Object.entries(result.notsup as Record<string, any>)) {
      expect(err, name).toMatchObject({ code: 'ENOTSUP' })
      expect(err.message, name).toMatch(/does not exist on Windows/)
    }
  })

  it('worker_threads: workers terminated with watches pending, a worker watch that resolves, the main one after', async () => {
    const r = run('workers.cjs')
    const result = await resultWith(r, 'done')
    expect(result.workers.terminated).toHaveLength(4)
    expect(result.workers.worker).toMatchObject({ info: { code: 4, signal: null } })
    expect(result.workers.main).toMatchObject({ code: 6, signal: null })
    expect(await r.exited).toBe(0) // no crash at exit, after the workers' cleanup hooks ran
  })

  it('a kill-on-close job: the host SIGKILLed from Linux takes child, cmd and grandchild with it', async () => {
    const r = run('tree-host.cjs', ['job'])
    const result = await resultWith(r, 'ready')
    const { child, cmd, leaf, jobPids } = result.tree
    // Everything the child started is in the job, the cmd.exe and the node.exe under it included.
    expect(jobPids).toEqual(expect.arrayContaining([child, cmd, leaf]))
    const before = tagged(r.tag)
    expect(before.some((p) => p.cmdline.includes('tree-leaf.cjs'))).toBe(true)
    expect(before.some((p) => p.cmdline.includes('tree-child.cjs'))).toBe(true)
    process.kill(r.pid, 'SIGKILL')
    await waitFor(() => tagged(r.tag).length === 0, 30_000, 'every process of the job to end')
  })

  it('the control: the same tree under Node spawn alone leaves the grandchild running', async () => {
    const r = run('tree-host.cjs', ['plain'])
    const result = await resultWith(r, 'ready')
    expect(result.tree.jobPids).toBeNull()
    process.kill(r.pid, 'SIGKILL')
    // libuv's own job takes the direct child; the node.exe under cmd broke away from it.
    await waitFor(() => !tagged(r.tag).some((p) => p.cmdline.includes('tree-child.cjs')), 30_000, 'the direct child to end')
    await new Promise((res) => setTimeout(res, 2000))
    expect(tagged(r.tag).filter((p) => p.cmdline.includes('tree-leaf.cjs'))).toHaveLength(1)
  })

  it('reapkit-job.exe: the command is in a job before it runs; the host SIGKILLed, nothing survives', async () => {
    const r = run('tree-host.cjs', ['launcher'])
    const result = await resultWith(r, 'ready')
    expect(result.passthrough).toMatchObject({ seven: { code: 7, signal: null }, missing: { code: 127, signal: null } })
    await hostKillEndsAll(r, ['reapkit-job.exe', 'tree-child.cjs', 'tree-leaf.cjs'], 'the launcher and its whole job to end')
  })

  it('TerminateJobObject ends every member and the job lists none', async () => {
    const r = run('tree-host.cjs', ['terminate'])
    const result = await resultWith(r, 'done')
    expect(result.tree.jobPids).toEqual(expect.arrayContaining([result.tree.child, result.tree.cmd, result.tree.leaf]))
    expect(result.terminated).toMatchObject({ child: { code: 9, signal: null }, jobPids: [] })
    await waitFor(() => tagged(r.tag).length === 0, 30_000, 'the tree to be gone')
  })

  for (const how of ['in libuv\'s job', 'detached']) {
    it(`reapkit's spawn (${how}): the host SIGKILLed from Linux, child, cmd and grandchild all end`, async () => {
      const r = run('spawn-host.cjs', how === 'detached' ? ['killed', 'detached'] : ['killed'])
      const result = await resultWith(r, 'ready')
      expect(result.tree.info).toEqual({ job: true })
      await hostKillEndsAll(r, ['reapkit-job.exe', 'tree-child.cjs', 'tree-leaf.cjs'], 'the launcher and its whole job to end')
    })
  }

  it('killProcessGracefully of a spawn()ed tree: the launcher ends its job and exits once it is empty', async () => {
    const r = run('spawn-host.cjs', ['kill'])
    const result = await resultWith(r, 'done')
    const { tree, kill } = result
    expect(kill.signalsSent).toEqual([expect.objectContaining({ signal: 'SIGTERM', job: true })])
    expect(kill).toMatchObject({ escalated: false, survivors: [], uncertain: false, code: 1, pgid: null })
    // The launcher exits only when its job lists no process: the tree is gone when the call returns.
    for (const pid of [tree.launcher, tree.cmd, tree.leaf]) {
      expect(tagged(r.tag).some((p) => p.cmdline.includes(String(pid)))).toBe(false)
    }
    expect(tagged(r.tag).filter((p) => /tree-(child|leaf)\.cjs|reapkit-job/.test(p.cmdline))).toEqual([])
    expect(await r.exited).toBe(0)
  })

  it('closeClient of a server behind cmd /c that ignores stdin end: forced phase, no survivors, the host exits', async () => {
    const r = run('spawn-host.cjs', ['close'])
    const result = await resultWith(r, 'done')
    expect(result.close).toMatchObject({ phase: 'forced', survivors: [] })
    expect(result.close.signalsSent[0]).toMatchObject({ job: true })
    expect(await r.exited).toBe(0) // nothing left holding its event loop
    await waitFor(() => tagged(r.tag).length === 0, 10_000, 'nothing of the tree left')
  })

  it('Supervisor.shutdownAll of 20 wedged children: all gone within the cap, none capped', async () => {
    const r = run('spawn-host.cjs', ['shutdown'])
    const result = await resultWith(r, 'done', 180_000)
    expect(result.started).toHaveLength(20)
    expect(result.shutdown).toMatchObject({ capped: 0, survivors: [] })
    expect(result.shutdown.phases.every((p: string) => p === 'forced')).toBe(true)
    expect(result.shutdown.statuses.every((s: string) => s === 'killed' || s === 'terminated')).toBe(true)
    // close 500 + grace 5000 + 1 s of slack (and more per child): the cap was never reached.
    expect(result.shutdown.ms).toBeLessThan(6500 + 20 * 50)
    expect(await r.exited).toBe(0)
    await waitFor(() => tagged(r.tag).length === 0, 10_000, 'no child left')
  }, 240_000)

  it('a .cmd file: refused without a shell (EINVAL, as Node since CVE-2024-27980), runs in a job with shell: true', async () => {
    const r = run('spawn-host.cjs', ['batch'])
    const result = await resultWith(r, 'done')
    expect(result.batch.refused).toMatchObject({ code: 'EINVAL', syscall: 'spawn' })
    expect(result.batch).toMatchObject({ code: 3, job: true })
  })

  it('reapkit-win (the reapkit command on Windows) behind cmd /c: the host SIGKILLed, the whole tree ends after the close timeout', async () => {
    const r = run('wrapper-host.cjs', ['killed'])
    await resultWith(r, 'ready')
    // The node.exe running reapkit-win is not in the host's job (cmd.exe's children break away
    // from libuv's job), so only the launcher's watch on its ancestors ends it and the tree.
    await hostKillEndsAll(r, ['reapkit-win.cjs', 'reapkit-job.exe', 'tree-child.cjs', 'tree-leaf.cjs'], 'the wrapper and its whole job to end')
  })

  it('reapkit-win: exit statuses pass through, a .cmd runs through cmd.exe, re-parsable arguments are refused', async () => {
    const r = run('wrapper-host.cjs', ['status'])
    const result = await resultWith(r, 'done')
    expect(result.status).toEqual({ seven: 7, batch: 3, refused: 2 })
  })

  it('batch files named with trailing dots or spaces are refused too, by spawn and by the launcher (nothing runs)', async () => {
    const r = run('review-cases.cjs', ['batch'])
    const { batch } = await resultWith(r, 'batch')
    expect(batch.refused).toEqual({ '""': 'EINVAL', '"."': 'EINVAL', '" "': 'EINVAL', '". ."': 'EINVAL' })
    expect(batch.launcher).toBe(125)
    expect(batch.ran).toBe(false)
  })

  it("Node's IPC channel and an extra stdio pipe pass through the launcher; a missing command is Node's ENOENT", async () => {
    const r = run('review-cases.cjs', ['stdio'])
    const { stdio } = await resultWith(r, 'stdio')
    expect(stdio.ipc).toMatchObject({ error: null, exit: 0, messages: [{ hi: 1 }] })
    expect(stdio.fd3).toMatchObject({ error: null, exit: 0, got: 'via fd3' })
    expect(stdio.missing).toMatchObject({ error: 'ENOENT' })
  })

  it('subprocess.kill() while the launcher starts: no command is left behind (suspended or not), stdio closes', async () => {
    const r = run('review-cases.cjs', ['early'])
    const { early } = await resultWith(r, 'early')
    expect(early).toHaveLength(10)
    for (const run of early) expect(run.close).toBe(true)
    await waitFor(() => tagged(r.tag).filter((p) => !p.cmdline.includes('review-cases.cjs')).length === 0, 10_000, 'no command left')
  })

  it('reapkit-win under a process whose parent had exited: the command runs to its end', async () => {
    const r = run('review-cases.cjs', ['orphan'])
    await waitFor(() => 'orphan' in r.result() || 'error' in r.result(), 120_000, 'the orphan case')
    expect(r.result().orphan).toEqual({ parentGone: true, code: 0, finished: true })
  })

  it("StdioClientTransport with no env: the server gets the SDK's Windows safe list (SYSTEMROOT, COMSPEC, PATHEXT, TEMP, APPDATA...)", async () => {
    const tag = newTag()
    const r = run('mcp-env.cjs', [winPath(join(tmpdir(), `${tag}-env.json`))], tag)
    const result = await resultWith(r, 'done')
    expect(result.defaults).toHaveLength(18)
    const got = (result.serverEnv as string[]).map((k) => k.toUpperCase())
    for (const name of ['SYSTEMROOT', 'COMSPEC', 'PATHEXT', 'TEMP', 'APPDATA', 'WINDIR', 'PATH']) expect(got, name).toContain(name)
    expect(got).not.toContain('SHELL')
  })

  // Issue 18 item 6. No container engine runs under Wine: the clients are argv-dump.exe under the
  // engines' names, and what is checked is what they received through Windows' command line.
  it('container runs spelled as on Windows (docker, C:\\Program Files\\...\\docker.exe, podman.exe, DOCKER.EXE): labelled before the image, the argv intact; -d left alone', async () => {
    const tag = newTag()
    const dir = join(tmpdir(), `${tag}-engines`)
    mkdirSync(dir)
    try {
      const r = run('containers.cjs', [winPath(dir), winPath(argvDump)], tag)
      const { cases, pid } = await resultWith(r, 'done')
      const image = ['reapkit-test/busybox', 'sleep', '1000']
      const labelled = (c: Record<string, any>, before: string[]) => [...before, '--label', `reapkit.run=${c.container.runId}`, '--label', `reapkit.owner=${c.container.owner}`, ...image]
      const expected: Record<string, { engine: string; globals: string[]; before: string[]; autoRemove: boolean }> = {
        bare: { engine: 'docker', globals: [], before: ['run', '-i', '--rm', '--label', `reapkit.test=${tag}`], autoRemove: true },
        programFiles: { engine: 'docker', globals: ['-H', 'npipe:////./pipe/docker_engine'], before: ['-H', 'npipe:////./pipe/docker_engine', 'run', '-i', '--rm'], autoRemove: true },
        podmanExe: { engine: 'podman', globals: ['--remote'], before: ['--remote', 'container', 'run', '-i', '-e', 'A B=c d'], autoRemove: false },
        upperCase: { engine: 'docker', globals: [], before: ['run', '-it'], autoRemove: false },
      }
      for (const [name, want] of Object.entries(expected)) {
        const c = cases[name]
        expect(c.exit, name).toEqual({ code: 0, signal: null })
        expect(c.container, name).toMatchObject({ engine: want.engine, bin: c.command, globals: want.globals, autoRemove: want.autoRemove, runId: expect.stringMatching(/^[0-9a-f-]{36}$/) })
        // Windows: the host's own pid, no start time, no PID namespace (the boot id is Linux's, read through Z:).
        expect(c.container.owner, name).toMatch(new RegExp(`^[^/]+/[^/]+/${pid}/-$`))
        expect(c.calls[0].argv, name).toEqual(labelled(c, want.before))
        // The client's exit started the container step: through the same program and global flags.
        expect(c.calls[1].argv.slice(0, want.globals.length + 1), name).toEqual([...want.globals, 'ps'])
        expect(c.calls[1].argv, name).toContain(`label=reapkit.run=${c.container.runId}`)
      }
      expect(cases.programFiles.command).toMatch(/^C:\\Program Files\\Docker\\rkw[0-9a-f]+\\resources\\bin\\docker\.exe$/)
      expect(cases.detached.container).toBeNull()
      expect(cases.detached.calls.map((k: { argv: string[] }) => k.argv)).toEqual([['run', '-d', ...image]])
      expect(await r.exited).toBe(0)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  // reapkit-win in front of a container run (issue 18 item 6). The stand-in client logs every call
  // and answers as an engine would (see test/win32/argv-dump.c): a container is gone only once a
  // stop (or kill, or rm) of it was asked for, or it ended by itself.
  describe('reapkit-win and a container run (a stand-in engine client)', () => {
    const image = (tag: string): string[] => ['reapkit-test/busybox', 'sleep', '1000', tag]
    const runIdOf = (argv: string[]): string => (argv.find((a) => a.startsWith('reapkit.run=')) ?? '').slice('reapkit.run='.length)
    /** The run call, labelled as the library's spawn() labels it: the two labels right before the image. */
    function expectLabelledRun(argv: string[], tag: string, globals: string[] = []): string {
      const runId = runIdOf(argv)
      expect(runId).toMatch(/^[0-9a-f-]{36}$/)
      const owner = argv[argv.indexOf('--label', globals.length + 4) + 1] ?? ''
      // Windows: reapkit-win's own pid, no start time, no PID namespace.
      expect(owner).toMatch(/^reapkit\.owner=[^/]+\/[^/]+\/\d+\/-$/)
      expect(argv).toEqual([...globals, 'run', '-i', '--rm', '--label', `reapkit.run=${runId}`, '--label', owner, ...image(tag)])
      return runId
    }
    const verbs = (calls: Array<{ argv: string[] }>): string[] => calls.map((c) => c.argv[0]!)
    /** A call of `verb` (stop, kill, rm) naming the run's container (its id: the run id without dashes). */
    const endsContainer = (calls: Array<{ argv: string[] }>, runId: string): boolean =>
      calls.some((c) => ['stop', 'kill', 'rm'].includes(c.argv[0]!) && c.argv.includes(runId.replace(/-/g, '')))
    const looksUp = (calls: Array<{ argv: string[] }>, runId: string): boolean =>
      calls.some((c) => c.argv[0] === 'ps' && c.argv.includes(`label=reapkit.run=${runId}`))

    function engineDir(tag: string): string {
      const dir = join(tmpdir(), `${tag}-engines`)
      mkdirSync(dir)
      return dir
    }

    it("behind cmd /c, the host SIGKILLed: the labelled run's container is stopped through the engine, then reapkit-win exits", async () => {
      const tag = newTag()
      const dir = engineDir(tag)
      try {
        const r = run('wrapper-containers.cjs', ['killed', winPath(dir), winPath(argvDump)], tag)
        await resultWith(r, 'ready')
        // Every tagged process ends: reapkit-win last, once the engine has confirmed the container gone.
        await hostKillEndsAll(r, ['reapkit-win.cjs', 'reapkit-job.exe', 'docker.exe'], 'the job, then reapkit-win after its container stop')
        const calls = engineCalls(join(dir, 'killed.jsonl'))
        const runId = expectLabelledRun(calls[0]!.argv, tag)
        expect(looksUp(calls.slice(1), runId), JSON.stringify(verbs(calls))).toBe(true)
        expect(endsContainer(calls.slice(1), runId), JSON.stringify(verbs(calls))).toBe(true)
        expect(existsSync(join(dir, 'states', runId.replace(/-/g, '')))).toBe(false) // the stand-in's container: gone
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })

    it('the gap: reapkit-win started directly by a Node host is in its kill-on-close job, and dies with it: the container is not stopped', async () => {
      const tag = newTag()
      const dir = engineDir(tag)
      try {
        const r = run('wrapper-containers.cjs', ['direct', winPath(dir), winPath(argvDump)], tag)
        await resultWith(r, 'ready')
        await hostKillEndsAll(r, ['reapkit-win.cjs', 'reapkit-job.exe', 'docker.exe'], 'the host, reapkit-win and its job to end')
        await new Promise((res) => setTimeout(res, 2000)) // an engine call, had any been made, is logged by now
        const calls = engineCalls(join(dir, 'direct.jsonl'))
        const runId = expectLabelledRun(calls[0]!.argv, tag)
        expect(verbs(calls)).toEqual(['run'])
        expect(readFileSync(join(dir, 'states', runId.replace(/-/g, '')), 'utf8')).toBe('running rm\n') // the stand-in's container runs on
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })

    it("the command exits by itself: its container is looked up, and stopped when it still runs; the status is the command's", async () => {
      const tag = newTag()
      const dir = engineDir(tag)
      try {
        const r = run('wrapper-containers.cjs', ['exits', winPath(dir), winPath(argvDump)], tag)
        const { exits } = await resultWith(r, 'done')
        // The client (given global flags) exited 3, its container running on: stopped through the
        // engine, every call with the same global flags.
        expect(exits.crashed.code).toBe(3)
        const globals = ['-H', 'npipe:////./pipe/docker_engine']
        const crashed = expectLabelledRun(exits.crashed.calls[0].argv, tag, globals)
        for (const call of exits.crashed.calls) expect(call.argv.slice(0, 2)).toEqual(globals)
        const crashedCalls = exits.crashed.calls.map((c: { argv: string[] }) => ({ argv: c.argv.slice(2) }))
        expect(looksUp(crashedCalls, crashed)).toBe(true)
        expect(endsContainer(crashedCalls, crashed), JSON.stringify(verbs(crashedCalls))).toBe(true)
        // The container ended (and was removed), the client exited 0: looked up, nothing to stop.
        expect(exits.ended.code).toBe(0)
        const ended = expectLabelledRun(exits.ended.calls[0].argv, tag)
        expect(looksUp(exits.ended.calls, ended)).toBe(true)
        expect(verbs(exits.ended.calls).filter((v) => v !== 'ps' && v !== 'inspect')).toEqual(['run'])
        expect(exits.crashed.stderr + exits.ended.stderr).toBe('')
        // A container that survives the engine's stop and kill: named on stderr, exit 123 (as on Linux), not the command's 5.
        expect(exits.survives.code).toBe(123)
        const survives = expectLabelledRun(exits.survives.calls[0].argv, tag)
        expect(verbs(exits.survives.calls)).toEqual(expect.arrayContaining(['stop', 'kill']))
        expect(exits.survives.stderr).toBe(`reapkit-win: container ${survives.replace(/-/g, '')} (docker) is still there after the engine's stop and kill\n`)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })

    it('no container run of ours (a plain command, run -d, ps, --no-container): no engine call but the command, statuses pass through', async () => {
      const tag = newTag()
      const dir = engineDir(tag)
      try {
        const r = run('wrapper-containers.cjs', ['plain', winPath(dir), winPath(argvDump)], tag)
        const { plain } = await resultWith(r, 'done')
        const argvs = (c: { calls: Array<{ argv: string[] }> }): string[][] => c.calls.map((k) => k.argv)
        expect(plain.node).toEqual({ code: 4, stderr: '', calls: [] })
        expect(plain.detached.code).toBe(0)
        expect(argvs(plain.detached)).toEqual([['run', '-d', ...image(tag)]])
        expect(argvs(plain.ps)).toEqual([['ps', tag]])
        expect(plain.noContainer.code).toBe(0)
        expect(argvs(plain.noContainer)).toEqual([['run', '-i', '--rm', ...image(tag)]])
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })
  })

  it('watchParent waits on a handle to the parent and fires when it exits', async () => {
    const r = run('parent-host.cjs')
    const host = await resultWith(r, 'host')
    const childFile = `${r.resultFile}.child`
    const read = (): Record<string, any> => {
      try {
        return JSON.parse(readFileSync(childFile, 'utf8'))
      } catch {
        return {}
      }
    }
    await waitFor(() => 'fired' in read() || 'error' in read(), 60_000, 'the child to see its parent exit')
    const child = read()
    expect(child.error).toBeUndefined()
    expect(child.watching).toMatchObject({ mechanism: 'handle', parentPid: host.host.pid, fired: false })
    expect(child.fired).toMatchObject({ mechanism: 'handle', parentPid: host.host.pid })
  })
})


