// The exec helper's own search of PATH (native/exec_search.c), alone: the helper is linked against
// musl where it can be (it starts ~0.3 ms faster than a static glibc one), and musl's execvp is not
// glibc's, so the search is written out with glibc's rules. Each case runs the helper directly (no
// parent lookup before it, no report pipe: a failure exits 127 for ENOENT, else 126) beside
// coreutils' `env`, whose exec is glibc's execvp and which exits with the same two codes; what each
// printed and its exit must match.
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { execHelperPath } from '../lib/ground/native'

const helper = process.platform === 'linux' ? execHelperPath() : null
// The reference is glibc's execvp: coreutils' env on a glibc system (not busybox's, not musl's).
const glibcEnv =
  process.platform === 'linux' && existsSync('/usr/bin/env') && /GNU coreutils/.test(spawnSync('/usr/bin/env', ['--version'], { encoding: 'utf8' }).stdout ?? '') &&
  /GLIBC|GNU libc/i.test(spawnSync('getconf', ['GNU_LIBC_VERSION'], { encoding: 'utf8' }).stdout ?? '')

const dir = mkdtempSync(join(tmpdir(), 'reapkit-exec-search-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function file(name: string, text: string, mode: number): string {
  const path = join(dir, name)
  mkdirSync(join(path, '..'), { recursive: true })
  writeFileSync(path, text)
  chmodSync(path, mode)
  return path
}

interface Ran {
  status: number | null
  stdout: string
}

/** Runs `file args` through `how` with exactly `env` (PATH left out when it is not there) in `cwd`. */
function run(how: 'glibc' | 'helper', env: Record<string, string>, cwd: string, name: string, args: string[]): Ran {
  const [cmd, argv] =
    how === 'glibc'
      ? ['/usr/bin/env', ['-i', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), name, ...args]]
      : [helper!, ['0', '0', '0', '-1', name, name, ...args]]
  const r = spawnSync(cmd, argv, { cwd, env: how === 'helper' ? env : {}, encoding: 'utf8', timeout: 10_000 })
  return { status: r.status, stdout: r.stdout }
}

function expectSame(env: Record<string, string>, name: string, args: string[] = [], cwd = dir): Ran {
  const theirs = run('glibc', env, cwd, name, args)
  const ours = run('helper', env, cwd, name, args)
  expect(ours).toEqual(theirs)
  return ours
}

describe.runIf(helper !== null && glibcEnv)("the exec helper's PATH search, beside glibc's execvp", () => {
  it('PATH unset: the default path (/bin:/usr/bin), not musl\'s', () => {
    const seen = expectSame({}, 'sh', ['-c', 'echo ran'])
    expect(seen).toEqual({ status: 0, stdout: 'ran\n' })
  })

  it('a file without #! found on PATH: /bin/sh runs it, its path as $0, the arguments after', () => {
    file('plain/rk-plain', 'echo "$0" "$@"\n', 0o755)
    const seen = expectSame({ PATH: join(dir, 'plain') }, 'rk-plain', ['a b', 'c'])
    expect(seen).toEqual({ status: 0, stdout: `${join(dir, 'plain', 'rk-plain')} a b c\n` })
    // No arguments at all past the name: $0 is still the path.
    expect(expectSame({ PATH: join(dir, 'plain') }, 'rk-plain').stdout).toBe(`${join(dir, 'plain', 'rk-plain')}\n`)
  })

  it('EACCES is remembered: a later entry runs, and with none the error is EACCES (126), not ENOENT', () => {
    file('noexec/rk-acc', '#!/bin/sh\necho no\n', 0o644)
    file('good/rk-acc', '#!/bin/sh\necho the-later-one\n', 0o755)
    expect(expectSame({ PATH: `${join(dir, 'noexec')}:${join(dir, 'good')}` }, 'rk-acc')).toEqual({ status: 0, stdout: 'the-later-one\n' })
    expect(expectSame({ PATH: `${join(dir, 'noexec')}:${join(dir, 'nowhere')}` }, 'rk-acc').status).toBe(126)
  })

  it('an empty entry is the current directory; an entry that is a file (ENOTDIR) is passed over', () => {
    file('cwd/rk-here', '#!/bin/sh\necho from-cwd\n', 0o755)
    expect(expectSame({ PATH: `${join(dir, 'nowhere')}::${join(dir, 'nowhere2')}` }, 'rk-here', [], join(dir, 'cwd')).stdout).toBe('from-cwd\n')
    file('afile', 'x', 0o644)
    file('later/rk-nd', '#!/bin/sh\necho after-enotdir\n', 0o755)
    expect(expectSame({ PATH: `${join(dir, 'afile')}:${join(dir, 'later')}` }, 'rk-nd').stdout).toBe('after-enotdir\n')
  })

  it('not found anywhere: ENOENT (127); a name past NAME_MAX: the kernel\'s error for each entry', () => {
    expect(expectSame({ PATH: join(dir, 'nowhere') }, 'rk-none').status).toBe(127)
    expect(expectSame({ PATH: join(dir, 'nowhere') }, 'x'.repeat(300)).status).toBe(127) // ENOENT: no such directory
    expect(expectSame({ PATH: dir }, 'x'.repeat(300)).status).toBe(126) // ENAMETOOLONG ends the search
  })

  it('a name with a slash is not searched; without #! it runs through /bin/sh too', () => {
    file('plain/rk-rel', 'echo rel "$0"\n', 0o755)
    expect(expectSame({ PATH: '/nonexistent' }, './plain/rk-rel').stdout).toBe('rel ./plain/rk-rel\n')
  })
})
