// What reaches onmessage from a stdio server (issue 32 item 4): the SDK's own schema decides, as the
// SDK's transport does, when the SDK is installed; without it, a check of ours gives the same outcome.
// Each line below goes through the SDK's StdioClientTransport (1.x and 2.x, this process) and through
// reapkit/mcp's (a child Node: test/fixtures/stdio-outcomes.cjs) with the SDK resolvable, then with
// it hidden: a copy of the package in a temporary node_modules where no @modelcontextprotocol is.
import { type ChildProcess, spawnSync } from 'node:child_process'
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { JSONRPCMessageSchema as SchemaV1 } from '@modelcontextprotocol/sdk/types.js'
import { parseJSONRPCMessage as parseV2 } from '@modelcontextprotocol/client'
import { checkMessageOwn } from '../lib/mcp/message-check'
import { FIXTURES, killChildren, ROOT } from './helpers'
import { StdioClientTransportV1, StdioClientTransportV2, trackSdkServer } from './mcp-sdk'

const linux = process.platform === 'linux'

/** Each case: a line a server writes, and what the issue says the SDK does with it. */
const CASES: Array<[string, string]> = [
  ['a request', '{"jsonrpc":"2.0","id":7,"method":"ping"}'],
  ['a notification with params', '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}'],
  ['a result', '{"jsonrpc":"2.0","id":"a","result":{"x":1}}'],
  ['an error response', '{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no","data":[1]}}'],
  ['an error response without an id (the SDK delivers it)', '{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}'],
  ['an extra top-level key on a request', '{"jsonrpc":"2.0","id":1,"method":"ping","extra":true}'],
  ['an extra top-level key on a result', '{"jsonrpc":"2.0","id":1,"result":{},"meta":1}'],
  ['"result": null', '{"jsonrpc":"2.0","id":1,"result":null}'],
  ['an array result', '{"jsonrpc":"2.0","id":1,"result":[]}'],
  ['array params', '{"jsonrpc":"2.0","id":1,"method":"ping","params":[1,2]}'],
  ['null params', '{"jsonrpc":"2.0","method":"notifications/x","params":null}'],
  ['a non-integer id', '{"jsonrpc":"2.0","id":1.5,"result":{}}'],
  ['a null id on a result', '{"jsonrpc":"2.0","id":null,"result":{}}'],
  ['both result and error', '{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}'],
  ['a non-integer error code', '{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}'],
  ['a progress token that is neither string nor integer', '{"jsonrpc":"2.0","method":"n","params":{"_meta":{"progressToken":true}}}'],
  ['a blank line', ''],
  ['a line that is not JSON', 'not json'],
  ['jsonrpc 1.0', '{"jsonrpc":"1.0","id":1,"result":{}}'],
  ['a __proto__ member', '{"jsonrpc":"2.0","id":1,"result":{},"__proto__":{}}'],
]

/** The lines, each after a mark (a notification naming its case) and an end mark after the last. */
const mark = (i: number | 'end') => JSON.stringify({ jsonrpc: '2.0', method: i === 'end' ? 'end' : `mark/${i}` })
const LINES = [...CASES.flatMap(([, line], i) => [mark(i), line]), mark('end')]

/** The events of one run, cut at the marks: per case, the events its line caused ('message', 'error'). */
function perCase(events: string[]): string[][] {
  const out: string[][] = CASES.map(() => [])
  let at = -1
  for (const e of events) {
    const m = /^message mark\/(\d+)$/.exec(e)
    if (m) at = Number(m[1])
    else if (e !== 'message end' && at >= 0) out[at]!.push(e.startsWith('message') ? 'message' : e)
  }
  return out
}

const servers = new Set<ChildProcess>()
afterEach(async () => {
  await killChildren(servers)
})

/** The SDK's own transport of line `n` over the same server and lines, in this process. */
async function sdkOutcomes(n: 1 | 2): Promise<string[][]> {
  const Transport = (n === 1 ? StdioClientTransportV1 : StdioClientTransportV2) as typeof StdioClientTransportV2
  const t = trackSdkServer(new Transport({ command: process.execPath, args: [join(FIXTURES, 'stdio-lines.cjs'), JSON.stringify(LINES)], stderr: 'pipe' }), servers)
  const events: string[] = []
  const end = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no end mark within 20 s')), 20_000)
    t.onmessage = (m) => {
      const method = (m as { method?: unknown }).method
      events.push(typeof method === 'string' ? `message ${method}` : 'message')
      if (method === 'end') {
        clearTimeout(timer)
        resolve()
      }
    }
  })
  t.onerror = () => events.push('error')
  await t.start()
  await end
  await t.close()
  return perCase(events)
}

interface Run {
  events: string[]
  zod: { beforeFirst: boolean; afterLast: boolean }
  sdk: boolean
}

/** reapkit/mcp's transport in a child Node, loaded from `mcp` (a path or a package name), run from `cwd`. */
function ourRun(mcp: string, n: 1 | 2, nodeArgs: string[] = [], cwd = ROOT): Run {
  const r = spawnSync(process.execPath, [...nodeArgs, join(FIXTURES, 'stdio-outcomes.cjs'), mcp, String(n), JSON.stringify(LINES)], {
    cwd,
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, NODE_PATH: '' },
  })
  expect(r.status, r.stderr).toBe(0)
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Run
}

/**
 * The package as an install without the SDK: TMP/node_modules/reapkit holds package.json, and dist/
 * and build/ as links to this checkout's; run with --preserve-symlinks, so that a require from
 * dist/cjs/mcp.js looks in TMP/node_modules (no @modelcontextprotocol there), never in the
 * checkout's node_modules.
 */
function installWithoutSdk(): { dir: string; mcp: string } {
  const dir = mkdtempSync(join(tmpdir(), 'reapkit-nosdk-'))
  const pkg = join(dir, 'node_modules', 'reapkit')
  mkdirSync(pkg, { recursive: true })
  writeFileSync(join(pkg, 'package.json'), readFileSync(join(ROOT, 'package.json')))
  symlinkSync(join(ROOT, 'dist'), join(pkg, 'dist'))
  symlinkSync(join(ROOT, 'build'), join(pkg, 'build'))
  return { dir, mcp: join(pkg, 'dist', 'cjs', 'mcp.js') }
}

describe.runIf(linux)('StdioClientTransport: what reaches onmessage, as the SDK decides it', () => {
  const expected: Partial<Record<1 | 2, string[][]>> = {}
  const getExpected = async (n: 1 | 2) => (expected[n] ??= await sdkOutcomes(n))
  let noSdk: { dir: string; mcp: string } | null = null
  afterAll(() => {
    if (noSdk) rmSync(noSdk.dir, { recursive: true, force: true })
  })

  it('the SDK itself: the issue\'s cases are turned away, an error response without an id delivered, a blank line reported by 1.x and skipped by 2.x', async () => {
    const [v1, v2] = [await getExpected(1), await getExpected(2)]
    const of = (n: 1 | 2, name: string) => (n === 1 ? v1 : v2)[CASES.findIndex(([c]) => c === name)]
    for (const n of [1, 2] as const) {
      for (const name of ['an extra top-level key on a request', '"result": null', 'array params', 'null params', 'a non-integer id', 'both result and error']) {
        expect(of(n, name), `${n}.x: ${name}`).toEqual(['error'])
      }
      expect(of(n, 'an error response without an id (the SDK delivers it)'), `${n}.x`).toEqual(['message'])
    }
    expect(of(1, 'a blank line')).toEqual(['error'])
    expect(of(2, 'a blank line')).toEqual([])
  })

  for (const n of [1, 2] as const) {
    it(`${n}.x, the SDK installed: the same outcome as the SDK's transport for every line; zod loaded by the first message, not by require`, async () => {
      const want = await getExpected(n)
      const run = ourRun(join(ROOT, 'dist', 'cjs', 'mcp.js'), n)
      expect(run.sdk).toBe(true)
      const got = perCase(run.events)
      for (const [i, [name]] of CASES.entries()) expect(got[i], `${n}.x: ${name}`).toEqual(want[i])
      expect(run.zod).toEqual({ beforeFirst: false, afterLast: true })
    })

    it(`${n}.x, the SDK hidden: our own check gives the same outcome for every line, and nothing loads zod`, async () => {
      const want = await getExpected(n)
      noSdk ??= installWithoutSdk()
      const run = ourRun(noSdk.mcp, n, ['--preserve-symlinks'], noSdk.dir)
      expect(run.sdk, 'the SDK is hidden').toBe(false)
      const got = perCase(run.events)
      for (const [i, [name]] of CASES.entries()) expect(got[i], `${n}.x: ${name}`).toEqual(want[i])
      expect(run.zod).toEqual({ beforeFirst: false, afterLast: false })
    })
  }
})

/** Values near the JSON-RPC shapes: the members the schema looks at, with values of every JSON kind. */
function nearMessages() {
  const scalar = fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string({ maxLength: 3 }), fc.constant('2.0'))
  const value = fc.oneof(scalar, fc.array(scalar, { maxLength: 2 }), fc.dictionary(fc.constantFrom('code', 'message', 'data', '_meta', 'x'), scalar, { maxKeys: 3 }))
  const meta = fc.dictionary(fc.constantFrom('progressToken', 'io.modelcontextprotocol/related-task', 'other'), fc.oneof(value, fc.record({ taskId: value })), { maxKeys: 2 })
  const params = fc.oneof(value, fc.record({ _meta: fc.oneof(meta, value) }, { requiredKeys: [] }))
  const error = fc.oneof(value, fc.record({ code: value, message: value, data: value, extra: value }, { requiredKeys: [] }))
  return fc.record(
    { jsonrpc: fc.oneof(fc.constant('2.0'), scalar), id: value, method: fc.oneof(fc.string({ maxLength: 4 }), value), params, result: fc.oneof(value, fc.record({ _meta: value, x: value }, { requiredKeys: [] })), error, extra: value },
    { requiredKeys: [] },
  )
}

describe('our own check of a JSON-RPC message', () => {
  it('says yes and no exactly as both SDK lines\' JSONRPCMessageSchema, over 10,000 generated values near the shapes', () => {
    fc.assert(
      fc.property(nearMessages(), (v) => {
        const value = JSON.parse(JSON.stringify(v)) as unknown // as it comes off the wire
        const own = checkMessageOwn(value)
        expect(own, `1.x: ${JSON.stringify(value)}`).toBe(SchemaV1.safeParse(value).success)
        let v2 = true
        try {
          parseV2(value)
        } catch {
          v2 = false
        }
        expect(own, `2.x: ${JSON.stringify(value)}`).toBe(v2)
      }),
      { numRuns: 10_000 },
    )
  })
})
