// Every snippet of the docs runs as written. Each fenced block of README.md and of every docs/*.md
// page is run in a process of its own (JavaScript under this Node, against the built package,
// imported as a user imports 'reapkit'; shell with bash; a host configuration's servers as a host
// starts them), in a project of its own, and the JavaScript blocks are type-checked with `strict`.
// What the test changes or adds is listed in test/readme/fixtures.ts; a block that cannot run here
// says why on its page (`<!-- doctest: skip (reason) -->`). The pages' relative links must lead to
// a page and a heading that exist.
//
// A run passes when the block's last line has run (the runner says so on fd 3), and the process
// then leaves: at its stdin's end, or at a SIGTERM 1 s later (a server), within bounds. Every
// process it started must be gone by the end of its test (the suite's leak guard, test/setup.ts).
import { type ChildProcess, spawnSync } from 'node:child_process'
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Block, docBlocks, docPages, hostServers, isEsm, isVitestSetup, OUTPUT, RUNNABLE, withoutComments } from './readme/blocks'
import { BINDINGS, COMMANDS, ENV, SUBSTITUTIONS, type Targets, VITEST_TESTS } from './readme/fixtures'
import { spawn } from '../lib/index'
import { captureProcesses } from '../lib/testing'
import { exitOf, ROOT, spawnGroup, trackGroup, waitFor } from './helpers'

const pages = docPages(ROOT)
const blocks = docBlocks(ROOT)
const linux = process.platform === 'linux'

/** How long a block may take to reach its last line, and to leave after its stdin ends / a SIGTERM. */
const EVALUATE_MS = 30_000
const STDIN_END_MS = 1_000
const SIGTERM_MS = 15_000
/** How long what a block started may take to leave after the block's own process has. */
const LEAVE_MS = 5_000

let work: string
let project: string
let commandsDir: string

function substitute(code: string, targets: Targets): string {
  return SUBSTITUTIONS.reduce((text, s) => text.replace(s.find, () => s.replace(targets)), code)
}

/** The fixture names a block uses and does not declare itself. */
function bindingsOf(code: string): string[] {
  const text = withoutComments(code)
  return Object.keys(BINDINGS).filter((name) => {
    const used = new RegExp(`(?<![.\\w$])${name}\\b(?!\\s*:)`).test(text)
    const declared = new RegExp(`\\b(const|let|var|function|class)\\s+(\\{[^}]*\\b${name}\\b[^}]*\\}|${name}\\b)|\\bimport\\b[^;\\n]*\\b${name}\\b[^;\\n]*\\bfrom\\b`).test(text)
    return used && !declared
  })
}

/** A file name of the project for a block: its page and line (README-md-L75, docs-cli-md-L20). */
const nameOf = (b: Block): string => `${b.file.replace(/[/.]/g, '-')}-L${b.line}`

/** The block as a file of the project: its fixtures first, then the block with its substitutions. */
function writeBlock(block: Block, targets: Targets): string {
  const esm = isEsm(block.code)
  const load = (m: string): string => (esm ? `(await import(${JSON.stringify(m)}))` : `require(${JSON.stringify(m)})`)
  const prelude = bindingsOf(block.code).map((name) => `const ${name} = ${BINDINGS[name]!.code(load, targets)} // doc test fixture\n`)
  const file = join(project, `${nameOf(block)}.${esm ? 'mjs' : 'cjs'}`)
  writeFileSync(file, prelude.join('') + substitute(block.code, targets))
  return file
}

interface Run {
  evaluated: boolean
  leftOn: 'stdin end' | 'SIGTERM' | 'SIGKILL'
  code: number | null
  signal: string | null
  output: string
}

/** Runs a block's file; see the top of the file for what a pass is. */
async function run(command: string, args: string[], stdinEndsAtOnce: boolean): Promise<Run> {
  // What the block starts, to give what it leaves on its way out a bounded moment (below).
  const started = captureProcesses()
  // reapkit's spawn: a group of its own through setpgid, not setsid (a session leader could not
  // run `setpgid(0, 0)` as a user's script does), cleaned up after the test as a group.
  const child: ChildProcess = spawn(command, args, {
    cwd: project,
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    env: { ...userEnv(), ...ENV, PATH: `${commandsDir}:${process.env.PATH}` },
  })
  trackGroup(child.pid!)
  let output = ''
  child.stdout!.on('data', (d) => (output += d))
  child.stderr!.on('data', (d) => (output += d))
  if (stdinEndsAtOnce) child.stdin!.end()
  const exited = exitOf(child, EVALUATE_MS + STDIN_END_MS + SIGTERM_MS + 10_000)
  exited.catch(() => {})
  const evaluated = await new Promise<boolean>((resolve) => {
    let timer = setTimeout(() => resolve(false), EVALUATE_MS)
    const done = (value: boolean) => {
      clearTimeout(timer)
      resolve(value)
    }
    const channel = child.stdio[3] as NodeJS.ReadableStream
    channel.on('data', (d) => String(d).includes('evaluated') && done(true))
    channel.on('end', () => done(false))
    // The channel's last bytes may come after the exit event; a process the block started may hold
    // the channel open past it: wait for its end, a little.
    child.once('exit', () => {
      clearTimeout(timer)
      timer = setTimeout(() => resolve(false), 2000)
    })
  })
  const within = async (ms: number): Promise<boolean> => {
    let timer: NodeJS.Timeout | undefined
    const out = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(r, ms, false)))])
    clearTimeout(timer)
    return out
  }
  child.stdin!.end()
  let leftOn: Run['leftOn'] = 'stdin end'
  if (!(await within(STDIN_END_MS))) {
    leftOn = 'SIGTERM'
    child.kill('SIGTERM')
    if (!(await within(SIGTERM_MS))) {
      leftOn = 'SIGKILL'
      child.kill('SIGKILL')
    }
  }
  const { code, signal } = await exited
  // A block's process that ends takes its own children with it by their death signal or their
  // stdin's end, a few ms later (more on a loaded machine: a `spawn('npx', ...)` block's npm is
  // SIGKILLed by the kernel, its `sh` and server then read the end of their stdin). Wait for those,
  // bounded; what is still alive after it is a leak, and the leak guard fails the test for it.
  try {
    await waitFor(() => started.survivors().length === 0, LEAVE_MS, 'the block\'s processes to leave').catch(() => {})
  } finally {
    started.stop()
  }
  // The end of it: a minified line of dist/ in a stack would drown the message.
  return { evaluated, leftOn, code, signal, output: output.length > 3000 ? `...${output.slice(-3000)}` : output }
}

/** This environment without npm's own variables (a block runs as a user's script would). */
function userEnv(): NodeJS.ProcessEnv {
  // (and without the outer vitest's, for the setup-file block's own vitest run)
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(npm_|VITEST|INIT_CWD$|NODE_OPTIONS$)/.test(k)))
}

/**
 * The real processes the blocks point at; the suite's group cleanup ends them after each test. The
 * pid lives 4 s: long enough for a loaded machine to start a block that opens it, short enough for
 * `watchExit(1234, { timeoutMs: 5000 })` to see it exit.
 */
function startTargets(): Targets {
  return { pid: spawnGroup('sleep', ['4']).pid!, pgid: spawnGroup('sleep', ['30']).pid! }
}

const title = (b: Block): string => `${b.file}:${b.line} (${b.lang}, ${b.heading})`

/** A word for bash, quoted. */
const shellWord = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string): string => heading.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replace(/ /g, '-')

/** The anchors of a page's headings (outside code blocks), a repeated one with GitHub's -1, -2... */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  let fence = false
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fence = !fence
    const m = /^#{1,6} (.*)$/.exec(line)
    if (!m || fence) continue
    const base = slug(m[1]!)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    anchors.add(n === 0 ? base : `${base}-${n}`)
  }
  return anchors
}

/** The `[text](target)` links of a page, outside its code blocks and inline code. */
function linksOf(markdown: string): Array<{ line: number; target: string }> {
  const links: Array<{ line: number; target: string }> = []
  let fence = false
  markdown.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) fence = !fence
    if (fence) return
    for (const m of line.replace(/`[^`]*`/g, '``').matchAll(/\]\(([^)\s]+)\)/g)) links.push({ line: i + 1, target: m[1]! })
  })
  return links
}

describe.runIf(linux)('the docs: README.md and docs/*.md', () => {
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'reapkit-readme-'))
    project = join(work, 'app')
    const modules = join(project, 'node_modules')
    mkdirSync(join(modules, '.bin'), { recursive: true })
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'readme-app', version: '1.0.0', private: true }))
    // `reapkit` is this checkout: links to its folders (dist/ as built, the addon), with copies of
    // package.json and bin/, which npx may rewrite (it makes bins executable) without touching the
    // checkout. Everything else is the checkout's node_modules.
    const self = join(modules, 'reapkit')
    mkdirSync(self)
    for (const entry of readdirSync(ROOT)) {
      if (entry === 'bin' || entry === 'package.json') cpSync(join(ROOT, entry), join(self, entry), { recursive: true })
      else if (entry !== 'node_modules' && entry !== '.git') symlinkSync(join(ROOT, entry), join(self, entry))
    }
    for (const entry of readdirSync(join(ROOT, 'node_modules'))) {
      if (!entry.startsWith('.') && entry !== 'reapkit') symlinkSync(join(ROOT, 'node_modules', entry), join(modules, entry))
    }
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> }
    for (const [name, file] of Object.entries(pkg.bin)) symlinkSync(join('..', 'reapkit', file), join(modules, '.bin', name))
    commandsDir = join(work, 'bin')
    mkdirSync(commandsDir)
    for (const [name, script] of Object.entries(COMMANDS)) {
      for (const dir of [commandsDir, join(modules, '.bin')]) {
        writeFileSync(join(dir, name), script)
        chmodSync(join(dir, name), 0o755)
      }
    }
    writeFileSync(
      join(work, 'runner.mjs'),
      [
        "import { closeSync, writeSync } from 'node:fs'",
        "import { pathToFileURL } from 'node:url'",
        'await import(pathToFileURL(process.argv[2]).href)',
        "writeSync(3, 'evaluated\\n')",
        'closeSync(3)',
      ].join('\n'),
    )
  })

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('every block is run, or says why not: no untagged block, no unknown language without a marker', () => {
    expect(pages.length, 'the README and the docs/ pages').toBeGreaterThan(10)
    const unclassified = blocks.filter((b) => !b.skip && !RUNNABLE.has(b.lang) && b.lang !== OUTPUT && b.lang !== 'json')
    expect(unclassified.map(title)).toEqual([])
    for (const b of blocks.filter((b) => b.lang === 'json')) expect(() => JSON.parse(b.code), title(b)).not.toThrow()
    const notHostConfigs = blocks.filter((b) => b.lang === 'json' && !b.skip && !hostServers(b.code))
    expect(notHostConfigs.map(title), 'a JSON block that is no host configuration (stdio servers with a command and args): mark it').toEqual([])
    expect(blocks.filter((b) => b.lang === 'js' && !b.skip).length).toBeGreaterThan(10)
  })

  it('every relative link leads to a file that exists, and an anchor to a heading of that page', () => {
    const broken: string[] = []
    for (const page of pages) {
      for (const { line, target } of linksOf(readFileSync(join(ROOT, page), 'utf8'))) {
        if (/^[a-z]+:/i.test(target)) continue // https:, mailto:
        const [path, anchor] = target.split('#') as [string, string | undefined]
        const file = path === '' ? join(ROOT, page) : join(ROOT, dirname(page), path)
        if (!existsSync(file)) broken.push(`${page}:${line}: ${target} (no such file)`)
        else if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(readFileSync(file, 'utf8')).has(anchor)) {
          broken.push(`${page}:${line}: ${target} (no such heading)`)
        }
      }
    }
    expect(broken).toEqual([])
  })

  for (const block of blocks.filter((b) => b.lang === 'js' && !b.skip && isVitestSetup(b.code))) {
    it(`${title(block)} runs as a vitest setup file: a clean test passes, a leaking one fails`, async () => {
      const dir = join(project, `vitest-${nameOf(block)}`)
      mkdirSync(dir)
      writeFileSync(join(dir, 'setup.mjs'), substitute(block.code, startTargets()))
      writeFileSync(join(dir, 'leak.test.mjs'), VITEST_TESTS)
      writeFileSync(join(dir, 'vitest.config.mjs'), "export default { test: { setupFiles: ['./setup.mjs'], include: ['leak.test.mjs'] } }\n")
      const vitest = join(project, 'node_modules', 'vitest', 'vitest.mjs')
      const r = await run(process.execPath, [vitest, 'run', '--root', dir, '--reporter', 'verbose'], true)
      const output = r.output.replace(/\x1b\[[0-9;]*m/g, '')
      expect(r.code, output).toBe(1)
      expect(output).toMatch(/✓ leak.test.mjs > waits for what it starts/)
      expect(output).toMatch(/× leak.test.mjs > leaves a process behind/)
      expect(output).toMatch(/ProcessLeakError: 1 process outlived the test \(now killed\)/)
    })
  }

  for (const block of blocks.filter((b) => b.lang === 'js' && !b.skip && !isVitestSetup(b.code))) {
    it(`${title(block)} runs under Node ${process.versions.node.split('.')[0]}`, async () => {
      const file = writeBlock(block, startTargets())
      const r = await run(process.execPath, [join(work, 'runner.mjs'), file], false)
      expect(r.evaluated, `never reached its last line:\n${r.output}`).toBe(true)
      expect(r.leftOn, `did not exit after SIGTERM:\n${r.output}`).not.toBe('SIGKILL')
      expect(r.code === 0 || (r.leftOn === 'SIGTERM' && r.signal === 'SIGTERM'), `exit ${r.code} ${r.signal}:\n${r.output}`).toBe(true)
    })
  }

  for (const block of blocks.filter((b) => b.lang === 'sh' && !b.skip)) {
    it(`${title(block)} runs under bash`, async () => {
      // The project's node_modules are links into this checkout's: an npm command that changes them
      // would change the checkout's. Such a block is for a user's machine: mark it skip.
      expect(/\bnpm\s+(install|i|ci|test|t|uninstall|update|link|prune|dedupe)\b/.test(block.code), 'an npm command that changes node_modules').toBe(false)
      const file = join(project, `${nameOf(block)}.sh`)
      writeFileSync(file, `set -eo pipefail\n${substitute(block.code, startTargets())}echo evaluated >&3\n`)
      const r = await run('bash', [file], true)
      expect(r.evaluated, `did not run to its end:\n${r.output}`).toBe(true)
      expect(r.code, r.output).toBe(0)
    })
  }

  for (const block of blocks.filter((b) => b.lang === 'json' && !b.skip)) {
    for (const server of hostServers(block.code) ?? []) {
      it(`${title(block)}: server "${server.name}" starts and leaves as a host runs it (stdin a pipe, ended)`, async () => {
        // A host starts the command with its stdin and stdout as pipes, and closes stdin to stop it.
        const file = join(project, `${nameOf(block)}-${server.name.replace(/\W/g, '_')}.sh`)
        writeFileSync(file, `set -eo pipefail\n${[server.command, ...server.args].map(shellWord).join(' ')}\necho evaluated >&3\n`)
        const r = await run('bash', [file], true)
        expect(r.evaluated, `did not run to its end:\n${r.output}`).toBe(true)
        expect(r.code, r.output).toBe(0)
      })
    }
  }

  it('every JavaScript and TypeScript block type-checks under strict (checkJs, as a user\'s editor sees it)', () => {
    const dir = join(project, 'typecheck')
    mkdirSync(dir, { recursive: true })
    const targets: Targets = { pid: 1234, pgid: 1234 }
    for (const b of blocks.filter((b) => (b.lang === 'js' || b.lang === 'ts') && !b.skip)) {
      const ext = b.lang === 'ts' ? (isEsm(b.code) ? 'mts' : 'cts') : isEsm(b.code) ? 'mjs' : 'cjs'
      writeFileSync(join(dir, `${nameOf(b)}.${ext}`), substitute(b.code, targets))
    }
    const declarations = Object.entries(BINDINGS).map(([name, b]) => `declare const ${name}: ${b.type}\n`)
    writeFileSync(join(dir, 'fixtures.d.ts'), declarations.join(''))
    const compilerOptions = {
      strict: true,
      allowJs: true,
      checkJs: true,
      noEmit: true,
      module: 'node16',
      moduleResolution: 'node16',
      moduleDetection: 'force',
      target: 'ES2022',
      lib: ['ES2022', 'ESNext.Disposable'],
      types: ['node'],
      skipLibCheck: true,
    }
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['*.mjs', '*.cjs', '*.mts', '*.cts', '*.d.ts'] }))
    const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { cwd: dir, encoding: 'utf8', timeout: 120_000 })
    expect(tsc.stdout + tsc.stderr).toBe('')
    expect(tsc.status).toBe(0)
  }, 120_000)
})
