// One grammar for a container run on both sides (issue 28 item 5): the library (parseContainerRun,
// lib/mechanisms/container/command.ts) and the C wrapper (native/supervise/run_grammar.c) read an argv
// from the same table (lib/mechanisms/container/grammar.ts, generated into
// native/supervise/run_grammar_table.h). Here: the committed header is what the table generates, and
// the same argvs (a table of cases, then thousands of random ones) get the same answer from both: a
// run or not, which engine, where the globals end, where `run` is, where its flags end, --rm. The C
// side answers through a driver linked with run_grammar.c alone (test/fixtures/run-grammar-driver.c),
// built here with the compiler (and, under scripts/sanitize/run.sh, the sanitizers).
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseContainerRun } from '../lib/mechanisms/container/command'
import { ENGINES, GLOBAL_FLAGS, RUN_FLAGS } from '../lib/mechanisms/container/grammar'
import { grammarHeader, HEADER_PATH } from '../scripts/container-grammar/header'
import { FIXTURES, ROOT } from './helpers'

const SANITIZE = process.env.REAPKIT_SANITIZE === '1' ? ['-fsanitize=address,undefined', '-fno-sanitize-recover=undefined', '-g'] : []

/** The library's answer, in the driver's words (argv indices: argv[0] is the program). */
function libraryAnswer(argv: readonly string[]): string {
  const run = parseContainerRun(argv[0]!, argv.slice(1))
  if (run === null) return 'plain'
  return `run ${run.engine} ${run.globals.length + 1} ${run.runAt + 1} ${run.flagsEnd + 1} ${run.autoRemove ? 1 : 0}`
}

let dir = ''
let driver = ''

/** The C wrapper's answers for many argvs, in one run of the driver (bounded). */
function wrapperAnswers(argvs: ReadonlyArray<readonly string[]>): string[] {
  const input = argvs
    .map((argv) => `${argv.length}\n${argv.map((a) => `${Buffer.byteLength(a)}\n${a}`).join('')}`)
    .join('')
  const r = spawnSync(driver, [], { input, encoding: 'utf8', timeout: 60_000 })
  expect(r.status, `driver: ${r.stderr}`).toBe(0)
  const lines = r.stdout.split('\n').slice(0, -1)
  expect(lines).toHaveLength(argvs.length)
  return lines
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'reapkit-grammar-'))
  driver = join(dir, 'run-grammar-driver')
  const cc = process.env.CC || 'cc'
  const sources = [join(FIXTURES, 'run-grammar-driver.c'), join(ROOT, 'native', 'supervise', 'run_grammar.c')]
  const r = spawnSync(cc, ['-std=c99', '-D_POSIX_C_SOURCE=200809L', '-D_DEFAULT_SOURCE', '-O1', '-Wall', '-Wextra', '-Werror', ...SANITIZE, '-o', driver, ...sources], {
    encoding: 'utf8',
    timeout: 120_000,
  })
  if (r.status !== 0) throw new Error(`building the grammar driver with ${cc} failed: ${r.error?.message ?? r.stderr}`)
})

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('the C header is the table', () => {
  it(`${HEADER_PATH} is what lib/mechanisms/container/grammar.ts generates (else: node scripts/container-grammar/generate.mjs)`, () => {
    expect(readFileSync(join(ROOT, HEADER_PATH), 'utf8')).toBe(grammarHeader())
  })

  it('generate.mjs --check agrees (the script a developer runs)', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'container-grammar', 'generate.mjs'), '--check'], { encoding: 'utf8', timeout: 60_000 })
    expect(r.status, r.stderr).toBe(0)
  })
})

describe('the library and the C wrapper read an argv alike', () => {
  // [argv, the answer both must give]: 'plain', or `run <engine> <globals end> <run> <flags end> <--rm>`
  const cases: Array<[string[], string]> = [
    [['docker', '-H=unix:///x.sock', 'run', '-i', '--rm', 'img'], 'run docker 2 2 5 1'], // the issue's
    [['docker', '-H', 'unix:///x.sock', 'run', 'img'], 'run docker 3 3 4 0'],
    [['docker', '-Hunix:///x', 'run', 'img'], 'run docker 2 2 3 0'],
    [['docker', '--host=tcp://h:2375', 'run', '--rm', 'img'], 'run docker 2 2 4 1'],
    [['docker', '--host', 'tcp://h:2375', 'run', 'img'], 'run docker 3 3 4 0'],
    [['docker', '-c', 'ctx', 'run', 'img'], 'run docker 3 3 4 0'],
    [['docker', '-c=ctx', 'run', 'img'], 'run docker 2 2 3 0'],
    [['docker', '--context=ctx', 'container', 'run', '--rm', 'img'], 'run docker 2 3 5 1'],
    [['docker', '--context', 'ctx', '-D', 'run', 'img'], 'run docker 4 4 5 0'],
    [['docker', '-Dl', 'debug', 'run', 'img'], 'run docker 3 3 4 0'], // a short cluster ending in a value flag
    [['docker', '-Dldebug', 'run', 'img'], 'run docker 2 2 3 0'],
    [['docker', '-D=true', 'run', 'img'], 'run docker 2 2 3 0'],
    [['docker', '-D=', 'run', 'img'], 'plain'], // pflag: `=` is then a flag of its own
    [['docker', '-l', 'debug', 'run', '-l', 'a=b', 'img'], 'run docker 3 3 6 0'], // -l: log level, then label
    [['docker', '-H'], 'plain'],
    [['docker', '--frob', 'run', 'img'], 'plain'],
    [['docker', '--url', 'x', 'run', 'img'], 'plain'], // podman's, not docker's
    [['podman', '--url=unix:///run/p.sock', 'run', '--rm', 'img'], 'run podman 2 2 4 1'],
    [['podman', '--url', 'unix:///run/p.sock', 'run', 'img'], 'run podman 3 3 4 0'],
    [['podman', '-r', '-c=machine', 'run', 'img'], 'run podman 3 3 4 0'],
    [['podman', '-rc', 'machine', 'run', 'img'], 'run podman 3 3 4 0'],
    [['podman', '--remote=false', 'run', 'img'], 'run podman 2 2 3 0'],
    [['podman', '-H', 'x', 'run', 'img'], 'plain'], // docker's, not podman's
    [['podman', 'run', '--replace', '--tls-verify=false', '--rm', 'img'], 'run podman 1 1 5 1'],
    [['nerdctl', '-H=unix:///run/containerd/containerd.sock', 'run', '--rm', 'img'], 'run nerdctl 2 2 4 1'],
    [['nerdctl', '-n=k8s.io', '-a', '/run/c.sock', 'run', 'img'], 'run nerdctl 4 4 5 0'],
    [['nerdctl', '--namespace', 'default', 'container', 'run', '-i', 'img'], 'run nerdctl 3 4 6 0'],
    [['docker', 'run', '--rm', '--', 'img', '--rm'], 'run docker 1 1 3 1'],
    [['docker', 'run', '--'], 'plain'],
    [['docker', '--', 'run', 'img'], 'plain'],
    [['docker', 'run', '-it', '--rm', 'img'], 'run docker 1 1 4 1'],
    [['docker', 'run', '-e', 'A=1', '--name', 'x', '-v', '/a:/b', 'img', 'sh'], 'run docker 1 1 8 0'],
    [['docker', 'run', '-e=A=1', 'img'], 'run docker 1 1 3 0'],
    [['docker', 'run', '-e=', 'img'], 'run docker 1 1 3 0'], // pflag: the value is "="
    [['docker', 'run', '-ie', 'A=1', 'img'], 'run docker 1 1 4 0'],
    [['docker', 'run', '-eA=1', '--name', '--rm', 'img'], 'run docker 1 1 5 0'], // --rm is the name
    [['docker', 'run', '--label=a=b', '-lc=d', 'img'], 'run docker 1 1 4 0'],
    [['docker', 'run', '-', 'img'], 'run docker 1 1 2 0'], // `-` is no flag: the image
    [['docker', 'run', '-i', ''], 'run docker 1 1 3 0'],
    [['docker', 'run', '--name'], 'plain'],
    [['docker', 'run', '--rm', '-i'], 'plain'], // no image
    [['docker', 'run', '-itd', 'img'], 'plain'],
    [['docker', 'run', '-i', '--rm', '-d', 'img'], 'plain'],
    [['docker', 'run', '-d=false', '--rm', 'img'], 'run docker 1 1 4 1'],
    [['docker', 'run', '-d=', 'img'], 'plain'],
    [['docker', 'run', '--detach=F', 'img'], 'run docker 1 1 3 0'],
    [['docker', 'run', '--detach=True', 'img'], 'plain'],
    [['docker', 'run', '--rm=True', 'img'], 'run docker 1 1 3 1'],
    [['docker', 'run', '--rm=tRuE', 'img'], 'plain'], // Go's ParseBool refuses it
    [['docker', 'run', '--rm', '--rm=0', 'img'], 'run docker 1 1 4 0'],
    [['docker', 'run', '--help'], 'plain'],
    [['docker', 'run', '--help=false', 'img'], 'run docker 1 1 3 0'],
    [['docker', 'run', '--rm', 'img', '-d'], 'run docker 1 1 3 1'], // the container's own flag
    [['docker', 'run', '-Z', 'img'], 'plain'],
    [['docker', 'run', '--frobnicate', 'img'], 'plain'],
    [['docker', 'exec', '-i', 'c', 'sh'], 'plain'],
    [['docker', 'container', 'exec', 'c'], 'plain'],
    [['docker', 'ps'], 'plain'],
    [['docker'], 'plain'],
    [['docker', ''], 'plain'],
    [['node', 'run', 'img'], 'plain'],
    [['dockerd', 'run', 'img'], 'plain'],
    [['/usr/local/bin/Docker.EXE', 'run', 'img'], 'run docker 1 1 2 0'],
    [['C:\\Program Files\\Docker\\docker.exe', 'run', '--rm', 'img'], 'run docker 1 1 3 1'],
    [['DOC\u212AER', 'run', 'img'], 'plain'], // the Kelvin sign folds to k in Unicode, not in ASCII
  ]

  it(`${cases.length} argvs: the same answer, and the expected one`, () => {
    const wrapper = wrapperAnswers(cases.map(([argv]) => argv))
    const rows = cases.map(([argv, expected], k) => ({ argv, expected, library: libraryAnswer(argv), wrapper: wrapper[k] }))
    expect(rows.filter((r) => r.library !== r.expected || r.wrapper !== r.expected)).toEqual([])
  })

  // Random argvs over the table's own words: every flag of every table, bare, with `=` and a value
  // (or an empty one), short ones clustered; subcommands, `--`, `-`, images, empty words.
  const shortNames = [...new Set([...RUN_FLAGS.values, ...RUN_FLAGS.booleans, ...ENGINES.flatMap((e) => [...GLOBAL_FLAGS[e].values, ...GLOBAL_FLAGS[e].booleans])].filter((f) => /^-[^-]$/.test(f)).map((f) => f[1]!))]
  const longNames = [...new Set([...RUN_FLAGS.values, ...RUN_FLAGS.booleans, ...ENGINES.flatMap((e) => [...GLOBAL_FLAGS[e].values, ...GLOBAL_FLAGS[e].booleans])].filter((f) => f.startsWith('--')))]
  const value = fc.constantFrom('', 'x', 'img', '=', '=x', 'true', 'false', 'T', 'F', '0', '1', 'True', 'tRuE', 'maybe', 'unix:///x.sock', 'A=1', 'é')
  const short = fc.tuple(fc.array(fc.constantFrom(...shortNames, 'Z', 'x', '='), { minLength: 1, maxLength: 3 }), fc.option(fc.tuple(fc.constantFrom('', '='), value)))
    .map(([letters, tail]) => `-${letters.join('')}${tail ? tail[0] + tail[1] : ''}`)
  const long = fc.tuple(fc.constantFrom(...longNames, '--frob', '--'), fc.option(value)).map(([name, v]) => (v === null ? name : `${name}=${v}`))
  const word = fc.oneof(
    { arbitrary: fc.constantFrom('run', 'container', 'exec', 'ps', '--', '-', 'img', '', 'sh'), weight: 3 },
    { arbitrary: short, weight: 3 },
    { arbitrary: long, weight: 3 },
    { arbitrary: value, weight: 1 },
  )
  const program = fc.constantFrom('docker', 'podman', 'nerdctl', '/usr/bin/docker', 'Podman.exe', 'C:\\bin\\nerdctl.EXE', 'docker.sh', 'node', '')
  // mostly some globals, a `run` (or `container run`), then run flags: so that many are runs
  const subcommand = fc.oneof({ arbitrary: fc.constant(['run']), weight: 6 }, { arbitrary: fc.constant(['container', 'run']), weight: 2 }, { arbitrary: fc.constant([]), weight: 1 })
  const argv = fc
    .tuple(program, fc.array(word, { maxLength: 3 }), subcommand, fc.array(word, { maxLength: 6 }))
    .map(([p, globals, sub, rest]) => [p, ...globals, ...sub, ...rest])

  it('20000 random argvs over the table: the same answer from both', () => {
    const seed = Date.now() ^ (process.pid << 8)
    const argvs = fc.sample(argv, { numRuns: 20_000, seed })
    const wrapper = wrapperAnswers(argvs)
    const differ = argvs.map((a, k) => ({ argv: a, library: libraryAnswer(a), wrapper: wrapper[k] })).filter((r) => r.library !== r.wrapper)
    expect(differ.slice(0, 5), `seed ${seed}: ${differ.length} of ${argvs.length} argvs read differently`).toEqual([])
    // the sample reached runs of every engine, not only plain commands
    const runs = argvs.filter((a) => libraryAnswer(a) !== 'plain').map((a) => libraryAnswer(a).split(' ')[1])
    expect(new Set(runs), `seed ${seed}`).toEqual(new Set(ENGINES))
  })
})
