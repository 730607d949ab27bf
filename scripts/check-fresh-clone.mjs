// The suite as a newcomer's fresh clone meets it: no container engine set up (scripts/containers/
// setup.sh never ran), no engine client on PATH, no Wine or anything scripts/win32/ makes. CI sets
// all of those up before `npm test`, so without this check it never sees the skip path.
//
// 1. Every vitest config (the suite, torture, sanitize, win32) collects: `vitest list` exits 0.
// 2. The files that need an engine (those that ask test/containers.ts for one, as the before-stop
//    hook selects them) and the Windows suite run: no file or test fails, and every skip says why
//    (scripts/fresh-clone-reporter.mjs judges): once with the clients on PATH, once without.
//
// Usage: node scripts/check-fresh-clone.mjs (after `npm ci`, which builds dist/ and the addon).
// Exit 0 when all holds; 1 with the problems listed.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs')
const reporter = join(root, 'scripts', 'fresh-clone-reporter.mjs')
// Each vitest run is bounded: the engine files run their engine-free tests too (about 15 s here).
const RUN_TIMEOUT_MS = 10 * 60_000
/** What a fresh clone's machine may lack: the engines' and Wine's commands. */
const HIDDEN = new Set(['docker', 'dockerd', 'podman', 'nerdctl', 'wine', 'wine64', 'wineserver'])

const scratch = mkdtempSync(join(tmpdir(), 'reapkit-fresh-clone-'))
const problems = []
try {
  if (!existsSync(join(root, 'dist', 'cjs', 'testing.js'))) run('build dist/', [join(root, 'scripts', 'build-ts.mjs')], process.env)
  const engines = join(scratch, 'engines') // empty: no engines.env
  const win32 = join(scratch, 'win32') // empty: no node.exe, no staged prebuild
  for (const d of [engines, win32]) mkdirSync(d)
  const fresh = { ...process.env, REAPKIT_ENGINES_DIR: engines, REAPKIT_WIN32_CACHE: win32 }
  delete fresh.REAPKIT_WIN32_REQUIRED // npm run test:win32's: there, a missing Wine fails rather than skips
  const bare = { ...fresh, PATH: pathWithout(HIDDEN, join(scratch, 'bin')) }

  for (const config of ['vitest.config.mts', 'vitest.torture.config.mts', 'vitest.sanitize.config.mts', 'vitest.win32.config.mts']) {
    run(`vitest list --config ${config}`, [vitest, 'list', '--config', config], fresh)
  }
  const engineFiles = readdirSync(join(root, 'test'))
    .filter((f) => /\.test\.[mc]?ts$/.test(f) && /enginesSkipReason|testEngines\(/.test(readFileSync(join(root, 'test', f), 'utf8')))
    .map((f) => join('test', f))
  for (const [what, env] of [['engine clients on PATH', fresh], ['no engine client on PATH', bare]]) {
    judged(`engine files, no engine set up, ${what}`, ['run', ...engineFiles], env)
  }
  judged('the Windows suite, no Wine', ['run', '--config', 'vitest.win32.config.mts'], bare)
} finally {
  rmSync(scratch, { recursive: true, force: true })
}
if (problems.length > 0) {
  console.error(`\ncheck-fresh-clone: ${problems.length} problem(s) on a fresh clone:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
  process.exit(1)
}
console.log('\ncheck-fresh-clone: every config collects; every engine and Windows file passes or skips saying why')

/** Runs node with `args`; a non-zero exit (or the bound) is a problem, with the output's tail. */
function run(what, args, env) {
  const started = Date.now()
  const r = spawnSync(process.execPath, args, { cwd: root, env, encoding: 'utf8', timeout: RUN_TIMEOUT_MS, maxBuffer: 64 << 20 })
  const secs = ((Date.now() - started) / 1000).toFixed(1)
  console.log(`== ${what}: exit ${r.status ?? r.signal} (${secs} s)`)
  if (r.status !== 0) {
    const tail = `${r.stdout}\n${r.stderr}`.replace(/\x1b\[[0-9;]*m/g, '').trim().split('\n').slice(-25).join('\n')
    problems.push(`${what}: exit ${r.status ?? r.signal}${r.error ? ` (${r.error.message})` : ''}\n${tail}`)
  }
  return r
}

/** A vitest run judged by the reporter: its problems, and its exit status. */
function judged(what, vitestArgs, env) {
  const verdictFile = join(scratch, 'verdict.json')
  rmSync(verdictFile, { force: true })
  run(what, [vitest, ...vitestArgs, '--reporter=default', `--reporter=${reporter}`], { ...env, REAPKIT_FRESH_CLONE_VERDICT: verdictFile })
  if (!existsSync(verdictFile)) return void problems.push(`${what}: the reporter wrote no verdict`)
  const verdict = JSON.parse(readFileSync(verdictFile, 'utf8'))
  for (const f of verdict.files) console.log(`   ${f.file}: ${f.tests} tests, ${f.skipped} skipped`)
  for (const p of verdict.problems) problems.push(`${what}: ${p}`)
}

/** A PATH whose directories are mirrored (symlinks) into `dir` without the `hidden` commands. */
function pathWithout(hidden, dir) {
  mkdirSync(dir)
  const linked = new Set(hidden)
  for (const d of (process.env.PATH ?? '').split(delimiter)) {
    if (d === '' || !existsSync(d)) continue
    for (const name of readdirSync(d)) {
      if (linked.has(name)) continue // hidden, or an earlier PATH entry's (the first wins, as in a lookup)
      linked.add(name)
      symlinkSync(join(d, name), join(dir, name))
    }
  }
  return dir
}
