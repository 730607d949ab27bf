// spawn as a drop-in (issue 22 item 5): for each case, what a caller sees from reapkit's spawn is
// what Node's spawn gives: what it throws, its events in order with their error fields, spawnfile,
// spawnargs, and what the child printed. Both run in a fresh process each
// (test/fixtures/spawn-outcome.cjs), so a case that needs a process-wide state (out of descriptors)
// gets it without touching this runner.
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { DIST, FIXTURES } from './helpers'

const linux = process.platform === 'linux'
const dir = mkdtempSync(join(tmpdir(), 'reapkit-conformance-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function file(name: string, text: string, mode: number): string {
  const path = join(dir, name)
  writeFileSync(path, text)
  chmodSync(path, mode)
  return path
}

/** What the caller sees, with `which` spawn; `prefix` runs the fixture under another command (prlimit). */
function outcome(which: 'node' | 'reapkit', spec: [string, string[], object], env: NodeJS.ProcessEnv = {}, prefix: string[] = []) {
  const argv = [...prefix, process.execPath, join(FIXTURES, 'spawn-outcome.cjs'), which, JSON.stringify(spec)]
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', timeout: 20_000, env: { ...process.env, REAPKIT_DIST: DIST, ...env } })
  expect(r.status, `${which}: ${r.stderr}`).toBe(0)
  return JSON.parse(r.stdout.trim().split('\n').pop()!)
}

function expectSame(spec: [string, string[], object], env: NodeJS.ProcessEnv = {}, prefix: string[] = []) {
  const theirs = outcome('node', spec, env, prefix)
  const ours = outcome('reapkit', spec, env, prefix)
  expect(ours).toEqual(theirs)
  return ours
}

const piped = { stdio: ['ignore', 'pipe', 'ignore'] }

describe.runIf(linux)('spawn, case by case, as Node spawns', () => {
  it('a cwd that does not exist: the same error event (ENOENT, syscall spawn <file>, path, spawnargs)', () => {
    const seen = expectSame(['sh', ['-c', 'echo hi'], { ...piped, cwd: join(dir, 'missing') }])
    expect(seen.events[0]).toMatchObject({ event: 'error', code: 'ENOENT' })
  })

  it('a file without execute permission (EACCES), by path', () => {
    const path = file('noexec.sh', '#!/bin/sh\necho ran\n', 0o644)
    const seen = expectSame([path, [], piped])
    expect(seen.events[0]).toMatchObject({ event: 'error', code: 'EACCES' })
  })

  it('an executable without a #! line: run by /bin/sh, as execvp does', () => {
    const path = file('noshebang', 'echo ran-by-sh\n', 0o755)
    const seen = expectSame([path, [], piped])
    expect(seen.stdout).toBe('ran-by-sh\n')
  })

  it('a command not found (ENOENT), and an env without PATH (both search the default path)', () => {
    expectSame(['reapkit-no-such-command', [], piped])
    const seen = expectSame(['sh', ['-c', 'echo path=${PATH:-unset}'], { ...piped, env: { HOME: '/' } }])
    expect(seen.events.map((e: { event: string }) => e.event)).toEqual(['spawn', 'exit'])
  })

  // Review: a PATH that is not a string threw `path.split is not a function` from reapkit's spawn;
  // Node writes it into the child's environment as `${value}`.
  it('a PATH that is not a string: searched as Node writes it into the environment', () => {
    expect(expectSame(['true', [], { ...piped, env: { PATH: ['/usr/bin'] } }]).events.map((e: { event: string }) => e.event)).toEqual(['spawn', 'exit'])
    expect(expectSame(['true', [], { ...piped, env: { PATH: 5 } }]).events[0]).toMatchObject({ event: 'error', code: 'ENOENT' })
  })

  it("shell: true: the same spawnfile and spawnargs ('/bin/sh', ['/bin/sh', '-c', line])", () => {
    const seen = expectSame(['echo', ['$((1+2))', 'x'], { ...piped, shell: true }])
    expect(seen).toMatchObject({ spawnfile: '/bin/sh', spawnargs: ['/bin/sh', '-c', 'echo $((1+2)) x'], stdout: '3 x\n' })
    expectSame(['echo $0', [], { ...piped, shell: '/bin/bash' }])
  })

  it('a string argv0: the target sees it as $0, spawnargs starts with it', () => {
    const seen = expectSame(['sh', ['-c', 'echo $0'], { ...piped, argv0: 'custom-zero' }])
    expect(seen).toMatchObject({ spawnargs: ['custom-zero', '-c', 'echo $0'], stdout: 'custom-zero\n' })
  })

  it('a non-zero exit and a death by signal: the same exit event', () => {
    expectSame(['sh', ['-c', 'exit 7'], piped])
    expectSame(['sh', ['-c', 'kill -TERM $$'], piped])
  })

  // The helper execs what the kernel would open, not a path made lexically (path.resolve's `..`):
  // through a symlinked cwd, `..` is the parent of the link's target.
  it("a command with a slash and `..` from a symlinked cwd: the file the kernel opens (the target's parent's)", () => {
    mkdirSync(join(dir, 'real', 'sub'), { recursive: true })
    symlinkSync(join(dir, 'real', 'sub'), join(dir, 'linkcwd'))
    file('real/lex', '#!/bin/sh\necho the-target-parent\n', 0o755)
    file('lex', '#!/bin/sh\necho the-lexical-parent\n', 0o755)
    const seen = expectSame(['../lex', [], { ...piped, cwd: join(dir, 'linkcwd') }])
    expect(seen.stdout).toBe('the-target-parent\n')
    // PATH='..' from the same cwd: execvp's `../lex`, relative to the child's cwd.
    const onPath = expectSame(['lex', [], { ...piped, cwd: join(dir, 'linkcwd'), env: { PATH: '..' } }])
    expect(onPath.stdout).toBe('the-target-parent\n')
  })

  // glibc's execvp goes on to the next PATH entry after ENOENT, ENOTDIR, EACCES, ESTALE, ENODEV and
  // ETIMEDOUT from execve, and stops at any other error (ELOOP...).
  it('a script whose interpreter is missing, first on PATH: the next entry runs, as with execvp', () => {
    mkdirSync(join(dir, 'm1-bad'))
    mkdirSync(join(dir, 'm1-good'))
    file('m1-bad/rk-m1', '#!/nonexistent/interpreter\necho bad\n', 0o755)
    file('m1-good/rk-m1', '#!/bin/sh\necho the-later-one\n', 0o755)
    const seen = expectSame(['rk-m1', [], { ...piped, env: { PATH: `${join(dir, 'm1-bad')}:${join(dir, 'm1-good')}` } }])
    expect(seen.stdout).toBe('the-later-one\n')
    // Alone on PATH: execvp's own error (ENOENT), with no later entry to run.
    const alone = expectSame(['rk-m1', [], { ...piped, env: { PATH: join(dir, 'm1-bad') } }])
    expect(alone.events[0]).toMatchObject({ event: 'error', code: 'ENOENT' })
  })

  it('a symlink loop first on PATH: execvp stops there (ELOOP), the later entry never runs', () => {
    mkdirSync(join(dir, 'm1-loop'))
    mkdirSync(join(dir, 'm1-after'))
    symlinkSync(join(dir, 'm1-loop', 'rk-loop'), join(dir, 'm1-loop', 'rk-loop'))
    file('m1-after/rk-loop', '#!/bin/sh\necho the-later-one\n', 0o755)
    const spec: [string, string[], object] = ['rk-loop', [], { ...piped, env: { PATH: `${join(dir, 'm1-loop')}:${join(dir, 'm1-after')}` } }]
    // Node throws ELOOP from spawn() (libuv's spawn fails before there is a process); the helper's
    // failure comes after its spawn, so reapkit emits it as an 'error' event (as for any exec error
    // outside Node's EACCES/EAGAIN/EMFILE/ENFILE/ENOENT): the same code, and nothing ran.
    expect(outcome('node', spec).threw).toMatchObject({ code: 'ELOOP' })
    const ours = outcome('reapkit', spec)
    expect(ours.events).toEqual([expect.objectContaining({ event: 'error', code: 'ELOOP', syscall: 'spawn rk-loop' })])
    expect(ours.stdout).toBe('')
  })

  const canPrlimit = linux && spawnSync('prlimit', ['--version'], { stdio: 'ignore' }).status === 0
  it.runIf(canPrlimit)('out of descriptors (EMFILE): what Node does (an error event, no process)', () => {
    const seen = expectSame(['sh', ['-c', 'echo hi'], piped], { FILL_FDS: '1' }, ['prlimit', '--nofile=64:64'])
    expect(seen.filled).toBe('EMFILE')
    expect(seen.events.some((e: { code?: string }) => e.code === 'EMFILE') || seen.threw?.code === 'EMFILE').toBe(true)
  })
})
