// Options are read as Node reads its own (issue 22 item 1): own properties only, so a prototype
// pollution anywhere in a host's dependencies cannot start a shell, change the uid or argv0, drop
// the group or the death signal, or shorten a grace. Before: `Object.prototype.shell = true` made
// spawn('echo', ['$HOME']) print the home folder; an inherited graceMs of 1 ms escalated at once.
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { DIST, exitOf, jsonLines, spawnFixture } from './helpers'

describe.runIf(process.platform === 'linux')('a polluted Object.prototype', () => {
  it('spawn, killProcessGracefully, closeClient and Supervisor read only the caller\'s own options', async () => {
    const child = spawnFixture('polluted.cjs')
    const out = await jsonLines(child.stdout!).next((m) => 'echo' in m || 'error' in m, 60_000, 'the result')
    expect(await exitOf(child, 30_000)).toEqual({ code: 0, signal: null })
    expect(out.error).toBeUndefined()
    expect(out.echo).toBe('$HOME\n') // no shell
    expect(out.supervisorEcho).toBe('$HOME\n')
    expect(out.sleeper).toEqual({ uid: process.getuid!(), pgidIsPid: true, info: { pgid: true, deathSignal: 'SIGKILL' }, comm: 'sleep' })
    expect(out.kill).toEqual({ escalated: false }) // the default grace, not 1 ms
    expect(out.close).toEqual({ phase: 'graceful' }) // the default close timeout, not 1 ms
  })

  it('every lazily loaded part loads when value, get, set and writable are inherited (esbuild\'s descriptors)', () => {
    const dir = join(dirname(DIST), 'parts')
    const parts = readdirSync(dir).filter((f) => f.endsWith('.js') && !f.startsWith('chunk-'))
    expect(parts.length).toBeGreaterThan(5)
    // Node's own builtins the parts require are loaded first: some (node:crypto) cannot load under
    // this pollution themselves, whoever requires them; what is tested is esbuild's helpers.
    const builtins = [...new Set(readdirSync(dir).filter((f) => f.endsWith('.js')).flatMap((f) => [...readFileSync(join(dir, f), 'utf8').matchAll(/require\("(node:[\w/]+)"\)/g)].map((m) => m[1])))]
    expect(builtins).toContain('node:crypto')
    const script = `
      const rk = require(${JSON.stringify(DIST)})
      for (const builtin of ${JSON.stringify(builtins)}) require(builtin)
      const polluted = ['value', 'get', 'set', 'writable']
      for (const key of polluted) Object.prototype[key] = key === 'get' || key === 'set' ? function () {} : true
      const failed = {}
      try {
        for (const part of ${JSON.stringify(parts)}) {
          try { require(${JSON.stringify(join(dirname(DIST), 'parts'))} + '/' + part) } catch (err) { failed[part] = err.message }
        }
      } finally {
        for (const key of polluted) delete Object.prototype[key]
      }
      console.log(JSON.stringify({ failed, clean: polluted.every((k) => !(k in {})) }))`
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 })
    expect(r.status, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toEqual({ failed: {}, clean: true })
  })
})
