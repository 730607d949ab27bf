// Everything the doc test changes or adds to a README block before it runs, in one place. A block
// otherwise runs exactly as written, in a project of its own where `reapkit` is this checkout's
// built package (node_modules/reapkit -> the repository) and the MCP SDKs, express and vitest are
// this checkout's copies.

/** What the test started for the blocks to point at: real processes, not children of the block. */
export interface Targets {
  /** A `sleep` that runs 4 s: stands in for a pid written as `1234` and for `pid`. */
  pid: number
  /** A `sleep` that leads its own process group: stands in for `pgid`. */
  pgid: number
}

/** Literal text replaced in a block (for the run and for the type check). */
export const SUBSTITUTIONS: Array<{ find: RegExp; replace: (t: Targets) => string; why: string }> = [
  { find: /\b1234\b/g, replace: (t) => String(t.pid), why: 'an example pid: a real `sleep` the test started' },
  { find: /\.listen\(3000\)/g, replace: () => '.listen(0)', why: 'port 3000: 0, so the system picks a free port' },
  { find: /probePort: 8081\b/g, replace: () => 'probePort: 0', why: 'port 8081: the same' },
]

/**
 * Names a block uses without defining them (the surrounding program the README leaves to the
 * reader). A block that uses one and does not declare it gets `const <name> = <code>` first.
 * `load(m)` is `require(m)` in a CommonJS block and `(await import(m))` in an ES module. `type` is
 * the declaration the type check sees.
 */
export const BINDINGS: Record<string, { code: (load: (m: string) => string, t: Targets) => string; type: string }> = {
  pid: { code: (_, t) => String(t.pid), type: 'number' },
  pgid: { code: (_, t) => String(t.pgid), type: 'number' },
  // A child of the block itself, that exits by itself within half a second.
  child: {
    code: (load) => `${load('reapkit')}.spawn('sleep', ['0.5'], { stdio: 'ignore' })`,
    type: "import('node:child_process').ChildProcess",
  },
  client: { code: () => '{ close: async () => {} }', type: '{ close(): Promise<void> }' },
  log: { code: () => '(line) => console.log(line)', type: '(line: string) => void' },
  cleanup: { code: () => '() => {}', type: '() => void' },
  drainAndExit: { code: () => '() => process.exit(0)', type: '() => never' },
  pino: {
    code: () => '() => ({ debug() {}, info() {}, warn() {}, error() {} })',
    type: "() => import('reapkit').Logger",
  },
  db: { code: () => '{ close: async () => {} }', type: '{ close(): Promise<void> }' },
  doWork: { code: () => '(signal) => Promise.resolve(signal.aborted)', type: '(signal: AbortSignal) => Promise<boolean>' },
  // The 1.x SDK's Express example: an app, and the session transports it keeps in a Map.
  app: { code: (load) => `${load('express')}.default()`, type: "import('express').Express" },
  transports: {
    code: () => 'new Map()',
    type: "Map<string, import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport>",
  },
  makeServer: {
    code: (load) => `((M) => () => new M({ name: 'readme', version: '1.0.0' }))(${load('@modelcontextprotocol/server')}.McpServer)`,
    type: "() => import('@modelcontextprotocol/server', { with: { 'resolution-mode': 'import' } }).McpServer",
  },
}

/**
 * Commands a block runs that are not on this machine, as executables on the blocks' PATH (and in
 * the project's node_modules/.bin, where `npx` finds a local one without the registry). Each is a
 * stdio server that exits when its stdin ends.
 */
export const COMMANDS: Record<string, string> = {
  uvx: '#!/bin/sh\n# stands in for uvx and the server it would fetch\nexec cat >/dev/null\n',
  'some-mcp-server': '#!/bin/sh\n# stands in for an npm package run by npx\nexec cat >/dev/null\n',
}

/**
 * A block that imports from 'vitest' is a setup file: it runs in `vitest run` beside these tests,
 * one clean and one that leaves a process behind, which the setup must turn into a failure.
 */
export const VITEST_TESTS = `import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { it } from 'vitest'

it('waits for what it starts', async () => {
  await once(spawn('sleep', ['0.1']), 'exit')
})

it('leaves a process behind', () => {
  spawn('sleep', ['30'], { stdio: 'ignore' })
})
`

/** The environment of every block: npm never asks the registry (npx finds local packages or fails). */
export const ENV = { npm_config_offline: 'true', npm_config_update_notifier: 'false', npm_config_fund: 'false' }
