// The exec helper's own search of PATH (native/exec_search.c), alone: the helper is linked against
// musl where it can be (it starts faster than a static glibc one), and musl's execvp is not glibc's,
// so the search is written out with glibc's rules. Each case runs the helper directly (no parent
// lookup before it, no report pipe: a failure prints its errno and exits 127 for ENOENT, else 126)
// beside a reference compiled here with this machine's cc against glibc, which calls execvp with the
// same arguments and prints the errno it ends with; what each printed, its errno and its exit must
// match.
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { execHelperPath } from '../lib/ground/native'

const dir = mkdtempSync(join(tmpdir(), 'reapkit-exec-search-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const helper = process.platform === 'linux' ? execHelperPath() : null

/** glibc's execvp as a program: `ref FILE ARGV0 ARGS...`, or null (no cc, or not glibc). */
function glibcReference(): string | null {
  if (process.platform !== 'linux') return null
  const out = join(dir, 'execvp-ref')
  const source = `#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#ifndef __GLIBC__
#error not glibc
#endif
int main(int argc, char **argv) {
  if (argc < 3) return 2;
  execvp(argv[1], argv + 2);
  fprintf(stderr, "(errno %d)\\n", errno);
  return errno == ENOENT ? 127 : 126;
}
`
  const r = spawnSync(process.env.CC || 'cc', ['-O2', '-x', 'c', '-', '-o', out], { input: source, stdio: ['pipe', 'ignore', 'ignore'], timeout: 60_000 })
  return r.status === 0 ? out : null
}
const reference = helper !== null ? glibcReference() : null

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
  errno: number | null
}

/** Runs `name args` through `how` with exactly `env` (PATH left out when it is not there) in `cwd`. */
function run(how: 'glibc' | 'helper', env: Record<string, string>, cwd: string, name: string, args: string[], found?: string): Ran {
  const argv = how === 'glibc' ? [name, name, ...args] : [...(found ? ['--found', found] : []), '0', '0', '0', '-1', name, name, ...args]
  const r = spawnSync(how === 'glibc' ? reference! : helper!, argv, { cwd, env, encoding: 'utf8', timeout: 10_000 })
  const errno = /\(errno (\d+)\)\n$/.exec(r.stderr)
  return { status: r.status, stdout: r.stdout, errno: errno ? Number(errno[1]) : null }
}

function expectSame(env: Record<string, string>, name: string, args: string[] = [], cwd = dir, found?: string): Ran {
  const theirs = run('glibc', env, cwd, name, args)
  const ours = run('helper', env, cwd, name, args, found)
  expect(ours).toEqual(theirs)
  return ours
}

describe.runIf(reference !== null)("the exec helper's PATH search, beside glibc's execvp", () => {
  it('PATH unset: the default path (/bin:/usr/bin), not musl\'s', () => {
    const seen = expectSame({}, 'sh', ['-c', 'echo ran'])
    expect(seen).toMatchObject({ status: 0, stdout: 'ran\n' })
  })

  it('a file without #! found on PATH: /bin/sh runs it, its path as $0, the arguments after', () => {
    file('plain/rk-plain', 'echo "$0" "$@"\n', 0o755)
    const seen = expectSame({ PATH: join(dir, 'plain') }, 'rk-plain', ['a b', 'c'])
    expect(seen).toMatchObject({ status: 0, stdout: `${join(dir, 'plain', 'rk-plain')} a b c\n` })
    // No arguments at all past the name: $0 is still the path.
    expect(expectSame({ PATH: join(dir, 'plain') }, 'rk-plain').stdout).toBe(`${join(dir, 'plain', 'rk-plain')}\n`)
  })

  it('EACCES is remembered: a later entry runs, and with none the error is EACCES (126), not ENOENT', () => {
    file('noexec/rk-acc', '#!/bin/sh\necho no\n', 0o644)
    file('good/rk-acc', '#!/bin/sh\necho the-later-one\n', 0o755)
    expect(expectSame({ PATH: `${join(dir, 'noexec')}:${join(dir, 'good')}` }, 'rk-acc')).toMatchObject({ status: 0, stdout: 'the-later-one\n' })
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
    expect(expectSame({ PATH: join(dir, 'nowhere') }, 'rk-none')).toMatchObject({ status: 127, errno: 2 })
    expect(expectSame({ PATH: join(dir, 'nowhere') }, 'x'.repeat(300)).errno).toBe(2) // ENOENT: no such directory
    expect(expectSame({ PATH: dir }, 'x'.repeat(300)).errno).toBe(36) // ENAMETOOLONG ends the search
    expect(expectSame({ PATH: join(dir, 'nowhere') }, 'x'.repeat(5000)).errno).toBe(2)
    expect(expectSame({ PATH: '/usr/bin' }, 'x'.repeat(4090)).errno).toBe(36)
  })

  it('an entry too long to hold the name: ENAMETOOLONG ends the search, the later entries are not tried', () => {
    expect(expectSame({ PATH: `/${'y'.repeat(4093)}:/usr/bin` }, 'true')).toMatchObject({ status: 126, errno: 36 })
  })

  it('a name with a slash is not searched; without #! it runs through /bin/sh too', () => {
    file('plain/rk-rel', 'echo rel "$0"\n', 0o755)
    expect(expectSame({ PATH: '/nonexistent' }, './plain/rk-rel').stdout).toBe('rel ./plain/rk-rel\n')
  })

  it('--found (the file the parent found): an error execvp passes over goes on with the search from the start', () => {
    file('f-bad/rk-f', '#!/nonexistent/interpreter\necho bad\n', 0o755)
    file('f-good/rk-f', '#!/bin/sh\necho the-later-one\n', 0o755)
    const env = { PATH: `${join(dir, 'f-bad')}:${join(dir, 'f-good')}` }
    expect(expectSame(env, 'rk-f', [], dir, join(dir, 'f-bad', 'rk-f')).stdout).toBe('the-later-one\n')
    // One that ends the search (a symlink loop: ELOOP) ends it at --found, as at the first entry.
    mkdirSync(join(dir, 'f-loop'))
    const { symlinkSync } = require('node:fs') as typeof import('node:fs')
    symlinkSync(join(dir, 'f-loop', 'rk-f'), join(dir, 'f-loop', 'rk-f'))
    const loop = { PATH: `${join(dir, 'f-loop')}:${join(dir, 'f-good')}` }
    expect(expectSame(loop, 'rk-f', [], dir, join(dir, 'f-loop', 'rk-f'))).toMatchObject({ status: 126, errno: 40 })
  })
})
