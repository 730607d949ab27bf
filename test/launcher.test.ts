// bin/reapkit, the sh launcher: it finds the supervisor in every layout npm makes (a clone, a local
// install's node_modules/.bin symlink, a global install's PREFIX/bin symlink, any other symlink) and
// starts no process of its own on the way there; `--help` names the subcommands and the docs/
// pages and sections that document them.
import { spawnSync } from 'node:child_process'
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { canUnshare, commandPid, ROOT } from './helpers'

const linux = process.platform === 'linux'
const BIN = join(ROOT, 'bin', 'reapkit')
const platformArch = `${process.platform}-${process.arch}`

let work: string
const layouts: Record<string, string> = {}

describe.runIf(linux)('bin/reapkit, the launcher', () => {
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'reapkit-launcher-'))
    // A package as a tarball installs it: bin/ and the prebuilt supervisor, no build/ folder.
    const pkg = (dir: string) => {
      mkdirSync(join(dir, 'prebuilds', platformArch), { recursive: true })
      cpSync(join(ROOT, 'bin'), join(dir, 'bin'), { recursive: true })
      copyFileSync(join(ROOT, 'build', 'Release', 'helper', 'reapkit-supervise'), join(dir, 'prebuilds', platformArch, 'reapkit-supervise'))
      return join(dir, 'bin', 'reapkit')
    }
    layouts.unpacked = pkg(join(work, 'unpacked'))
    const local = join(work, 'app', 'node_modules')
    pkg(join(local, 'reapkit'))
    mkdirSync(join(local, '.bin'))
    symlinkSync('../reapkit/bin/reapkit', join(local, '.bin', 'reapkit'))
    layouts['local install (node_modules/.bin)'] = join(local, '.bin', 'reapkit')
    const prefix = join(work, 'prefix')
    pkg(join(prefix, 'lib', 'node_modules', 'reapkit'))
    mkdirSync(join(prefix, 'bin'))
    symlinkSync('../lib/node_modules/reapkit/bin/reapkit', join(prefix, 'bin', 'reapkit'))
    layouts['global install (PREFIX/bin)'] = join(prefix, 'bin', 'reapkit')
    // Some other tool's link to npm's link: resolved with readlink, as before.
    symlinkSync(layouts['local install (node_modules/.bin)']!, join(work, 'elsewhere'))
    layouts['a link to the link'] = join(work, 'elsewhere')
  })

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('finds the supervisor in every layout', () => {
    for (const [name, launcher] of [['clone', BIN], ...Object.entries(layouts)] as const) {
      const r = spawnSync(launcher, ['--', '/bin/sh', '-c', 'exit 7'], { encoding: 'utf8', timeout: 20_000 })
      expect(r.status, `${name}: ${r.stderr}`).toBe(7)
    }
    // Run by `sh`, from npm's .bin folder, by a bare name.
    const r = spawnSync('sh', ['reapkit', '--version'], { cwd: join(work, 'app', 'node_modules', '.bin'), encoding: 'utf8', timeout: 20_000 })
    expect(r.stdout).toMatch(/^reapkit \d/)
  })

  it.runIf(canUnshare)('starts no process of its own: the command is the second process of a new PID namespace', () => {
    expect(commandPid(BIN), 'clone').toBe(2)
    for (const name of ['unpacked', 'local install (node_modules/.bin)', 'global install (PREFIX/bin)']) {
      expect(commandPid(layouts[name]!), name).toBe(2)
    }
    // The fallback for other layouts still works (it may start readlink).
    expect(commandPid(layouts['a link to the link']!)).toBeGreaterThanOrEqual(2)
  })

  it('--help lists the subcommands and the docs pages and sections that document them', () => {
    const r = spawnSync(BIN, ['--help'], { encoding: 'utf8', timeout: 20_000 })
    expect(r.status).toBe(0)
    expect(r.stdout).toMatch(/^usage: reapkit \[options\] -- command/)
    expect(r.stdout).toMatch(/^ {7}reapkit doctor /m)
    expect(r.stdout).toMatch(/^ {2}reapkit-win -- command /m)
    const sections = [...r.stdout.matchAll(/(docs\/[\w-]+\.md): "([^"]+)"/g)].map((m) => ({ page: m[1]!, section: m[2]! }))
    expect(sections).toHaveLength(5) // the four commands, and the command's cgroup (docs/cli.md)
    for (const { page, section } of sections) {
      const headings = readFileSync(join(ROOT, page), 'utf8').split('\n').filter((l) => l.startsWith('#'))
      expect(headings.some((h) => h.includes(section)), `${page}: "${section}"`).toBe(true)
    }
  })
})
