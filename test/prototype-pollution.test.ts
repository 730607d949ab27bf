// Options are read as Node reads its own (issue 22 item 1): own properties only, so a prototype
// pollution anywhere in a host's dependencies cannot start a shell, change the uid or argv0, drop
// the group or the death signal, or shorten a grace. Before: `Object.prototype.shell = true` made
// spawn('echo', ['$HOME']) print the home folder; an inherited graceMs of 1 ms escalated at once.
import { describe, expect, it } from 'vitest'
import { exitOf, jsonLines, spawnFixture } from './helpers'

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
})
