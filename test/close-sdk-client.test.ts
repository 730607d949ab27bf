// closeClient(child, { close: () => client.close() }), the documented pattern (issue 32 item 5), with
// real SDK clients: a Client of either line over the child's own pipes (the SDK's
// StdioServerTransport(child.stdout, child.stdin)) lets go of the streams on close() but never ends
// them, so the server, which leaves on stdin end, was left to the 2 s timeout and SIGTERM. closeClient
// ends stdin after the caller's close(): the server leaves in phase 1.
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { closeClient, spawn } from '../lib/index'
import { DIST, isGone, ROOT, trackGroup } from './helpers'
import { fixtureServer, newClient, pipeTransport } from './mcp-sdk'

const linux = process.platform === 'linux'

const SERVERS = [
  { name: 'the 1.x fixture server', line: 1 as const, command: process.execPath, args: [fixtureServer(1)] },
  { name: 'the 2.x fixture server', line: 2 as const, command: process.execPath, args: [fixtureServer(2)] },
  // A real published server (on the 1.x SDK, whose StdioServerTransport ignores stdin end: it leaves
  // because nothing else keeps its loop alive once stdin has ended).
  { name: '@modelcontextprotocol/server-memory (a 2.x client)', line: 2 as const, command: join(ROOT, 'node_modules', '.bin', 'mcp-server-memory'), args: [] },
]

describe.runIf(linux)('closeClient with an SDK client\'s close(): the documented pattern', () => {
  for (const s of SERVERS) {
    it(`${s.name}: graceful: stdin ended after client.close(), the server leaves in phase 1`, async () => {
      const child = spawn(s.command, s.args, { stdio: ['pipe', 'pipe', 'ignore'], env: { ...process.env, REAPKIT_DIST: DIST, MEMORY_FILE_PATH: '/dev/null' } })
      trackGroup(child.pid!)
      const client = newClient(s.line)
      await client.connect(pipeTransport(s.line, child))
      await (client as unknown as { listTools(): Promise<{ tools: unknown[] }> }).listTools()
      const report = await closeClient(child, { close: () => client.close(), closeTimeoutMs: 5000, graceMs: 1000 })
      expect(report.phase).toBe('graceful') // before: 'forced' at the timeout, SIGTERM to the group
      expect(report.closeCompleted).toBe(true)
      expect(report.closeError).toBe(null)
      expect(report.signalsSent).toEqual([])
      expect(isGone(child.pid!)).toBe(true)
    })
  }
})

// Review of issue 32 item 5: a caller's close() that never settles (an SDK client's close() stuck on
// a request) kept stdin open until the very deadline, so the server had no time left to leave on
// it: every such close ended 'forced', SIGTERM to a server that would have left on EOF.
describe.runIf(linux)('closeClient with a close() that never settles', () => {
  it("ends stdin before the deadline (500 ms, at most half the bound, before it): a server that leaves on EOF leaves in phase 1, no signal", async () => {
    // cat leaves on stdin end at once: what is measured is when the EOF came, not how fast it left.
    const child = spawn('cat', [], { stdio: ['pipe', 'ignore', 'ignore'] })
    trackGroup(child.pid!)
    const report = await closeClient(child, { close: () => new Promise(() => {}), closeTimeoutMs: 2000, graceMs: 1000 })
    expect(report.phase).toBe('graceful') // before: 'forced', stdin ended with ~0 ms left
    expect(report.closeCompleted).toBe(false)
    expect(report.signalsSent).toEqual([])
    expect(report.code).toBe(0)
    expect(report.gracefulMs).toBeGreaterThanOrEqual(1400) // the close() was given its time first
    expect(isGone(child.pid!)).toBe(true)
  })

  it('a close() that settles ends stdin at once, as before', async () => {
    const child = spawn('cat', [], { stdio: ['pipe', 'ignore', 'ignore'] })
    trackGroup(child.pid!)
    const report = await closeClient(child, { close: async () => {}, closeTimeoutMs: 20_000, graceMs: 1000 })
    expect(report).toMatchObject({ phase: 'graceful', closeCompleted: true, closeError: null, signalsSent: [], code: 0 })
    expect(report.gracefulMs).toBeLessThan(15_000) // not the reserve before a 20 s deadline
  })
})
