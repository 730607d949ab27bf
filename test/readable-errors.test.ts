// What a user sees when they pass a bad argument: the built bundle (dist/cjs/index.js, what
// `require('reapkit')` loads) is not minified, so Node prints the short `throw` line, and its source
// map leads from the stack's top frame back to lib/.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { SourceMap } from 'node:module'
import { isAbsolute, join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { DIST } from './helpers'

const script = `require(${JSON.stringify(DIST)}).killProcessGracefully('x')`

function crash(flags: string[]): string[] {
  const r = spawnSync(process.execPath, [...flags, '-e', script], { encoding: 'utf8', timeout: 30_000 })
  expect(r.status).toBe(1)
  return r.stderr.split('\n')
}

/** `at fn (file:line:col)` of the first stack frame. */
function topFrame(lines: string[]): { fn: string; file: string; line: number; column: number } {
  const frame = lines.find((l) => /^\s+at /.test(l))!
  const m = /^\s+at (\S+) \((.+):(\d+):(\d+)\)$/.exec(frame)
  expect(m, frame).not.toBeNull()
  return { fn: m![1]!, file: m![2]!, line: Number(m![3]), column: Number(m![4]) }
}

describe('errors a user can read', () => {
  it('an uncaught TypeError prints its short throw line, and the top frame maps to lib/', () => {
    const lines = crash([])
    // Node prints `file:line`, the source line, a caret, then the error.
    expect(lines[0]).toMatch(/dist\/cjs\/index\.js:\d+$/)
    expect(lines[1]!.length, 'the printed source line').toBeLessThan(200)
    expect(lines[1]).toMatch(/\bthrow\b/)
    expect(lines).toContain('TypeError: The "pid" argument must be of type number. Received "x"')

    const top = topFrame(lines)
    expect(top.file).toBe(DIST)
    expect(top.fn).toBe('validatePid')
    const map = new SourceMap(JSON.parse(readFileSync(`${DIST}.map`, 'utf8')))
    const entry = map.findEntry(top.line - 1, top.column - 1) as { originalSource: string; originalLine: number }
    const source = isAbsolute(entry.originalSource) ? entry.originalSource : resolve(join(DIST, '..'), entry.originalSource)
    expect(source).toMatch(/\/lib\/ground\/validate\.ts$/)
    const original = readFileSync(source, 'utf8').split('\n')[entry.originalLine]!
    expect(original).toMatch(/throw typeError\(/)
  })

  it('with --enable-source-maps, every reapkit frame names lib/', () => {
    const lines = crash(['--enable-source-maps'])
    const ours = lines.filter((l) => /^\s+at /.test(l) && !/\[eval\]|node:/.test(l))
    expect(ours.length).toBeGreaterThan(0)
    for (const frame of ours) expect(frame).toMatch(/\/lib\/[\w/-]+\.ts:\d+:\d+\)$/)
    expect(topFrame(lines).file).toMatch(/\/lib\/ground\/validate\.ts$/)
  })
})
