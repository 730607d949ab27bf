// spawn() validates what it consumes itself as Node's spawn does (issue 22 item 4): the same error
// classes, codes and messages as child_process.spawn for a bad file, argv0 and shell, thrown before
// anything starts. Before: spawn('') threw ERR_INVALID_ARG_TYPE, { argv0: 123 } spawned with
// spawnargs [123] and { shell: 1 } ran /bin/sh -c.
import * as childProcess from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { spawn } from '../lib/index'

function thrown(f: () => unknown): { name: string; code: string; message: string } | null {
  try {
    const child = f() as childProcess.ChildProcess
    child.kill?.('SIGKILL')
    return null
  } catch (err) {
    const e = err as Error & { code: string }
    return { name: e.name, code: e.code, message: e.message }
  }
}

describe.runIf(process.platform !== 'win32')('spawn() validates as Node does', () => {
  const cases: Array<[string, unknown[]]> = [
    ['an empty file', ['']],
    ['a number as file', [5]],
    ['undefined as file', [undefined]],
    ['argv0: 123', ['true', [], { argv0: 123 }]],
    ['shell: 1', ['true', [], { shell: 1 }]],
    ['shell: {}', ['true', [], { shell: {} }]],
  ]
  for (const [what, args] of cases) {
    it(`${what}: the same error as child_process.spawn`, () => {
      const node = thrown(() => (childProcess.spawn as (...a: unknown[]) => unknown)(...args))
      const ours = thrown(() => (spawn as (...a: unknown[]) => unknown)(...args))
      expect(node, 'Node throws').not.toBe(null)
      expect(ours).toEqual(node)
    })
  }
})
