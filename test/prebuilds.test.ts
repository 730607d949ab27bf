// What the package ships in prebuilds/, file by file, read with binutils' readelf (which reads any
// ELF machine): the gnu addons need no glibc symbol version above the 2.28 baseline and no
// libstdc++, the musl addons need no versioned symbol at all and only libc.so, the helpers are
// static, every file is built for its folder's machine. The same facts as the build's own gate
// (scripts/prebuild/check.mjs, run by prepack), which must agree with readelf. A fresh clone has no
// prebuilds/ (`npm run prebuild` makes them): those tests skip, saying so.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from './helpers'

interface Target { name: string; dir: string; addon: string; os: string; cpu: string; libc?: 'glibc' | 'musl'; machine: string; how: string }
interface Facts { format: string; machine: string; needed?: string[]; versions?: Record<string, string[]>; glibcMax?: string | null; static?: boolean; interpreter?: string | null }
interface Row { target: Target; missing: string[]; files: Record<string, Facts>; problems: string[] }

const PREBUILDS = join(ROOT, 'prebuilds')
const BASELINE = [2, 28]
const HELPERS = ['reapkit-exec', 'reapkit-supervise']

// check.mjs exits 1 while a target is missing (darwin is, on Linux): its JSON is printed either way.
const checked = spawnSync(process.execPath, [join(ROOT, 'scripts', 'prebuild', 'check.mjs'), '--json'], { encoding: 'utf8', timeout: 60_000 })
const rows = JSON.parse(checked.stdout) as Row[]
const haveReadelf = spawnSync('readelf', ['--version'], { stdio: 'ignore' }).status === 0

/** What readelf says a file needs: machine, type, interpreter, NEEDED, and the version names per library. */
function readelf(file: string) {
  const run = (flag: string) => {
    const r = spawnSync('readelf', ['-W', flag, file], { encoding: 'utf8', timeout: 30_000 })
    if (r.status !== 0) throw new Error(`readelf ${flag} ${file}: ${r.stderr}`)
    return r.stdout
  }
  const header = run('-h')
  const versions: Record<string, string[]> = {}
  let lib = ''
  for (const line of run('-V').split('\n')) {
    const file = /File: (\S+)\s+Cnt:/.exec(line)
    if (file) versions[(lib = file[1]!)] = []
    const name = /Name: (\S+)\s+Flags:/.exec(line)
    if (name && lib) versions[lib]!.push(name[1]!)
  }
  return {
    machine: /Machine:\s+(.*)/.exec(header)![1]!.trim(),
    type: /Type:\s+(\w+)/.exec(header)![1]!,
    interpreter: /Requesting program interpreter: ([^\]]+)\]/.exec(run('-l'))?.[1] ?? null,
    needed: [...run('-d').matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]!),
    versions,
  }
}

/** Dynamic symbols of `file`: the undefined ones it needs (strong only) and the ones it defines. */
function dynamicSymbols(file: string): { undefined: string[]; defined: Set<string> } {
  const r = spawnSync('readelf', ['-W', '--dyn-syms', file], { encoding: 'utf8', timeout: 30_000 })
  const rows = r.stdout.split('\n').map((l) => l.trim().split(/\s+/)).filter((f) => f.length >= 8 && /^\d+:$/.test(f[0]!))
  return {
    undefined: rows.filter((f) => f[6] === 'UND' && f[4] === 'GLOBAL').map((f) => f[7]!.replace(/@.*/, '')),
    defined: new Set(rows.filter((f) => f[6] !== 'UND').map((f) => f[7]!.replace(/@.*/, ''))),
  }
}

// Debian's musl (musl-tools): what a musl libc.so exports (1.2.3, as Alpine 3.17; musl's API is the
// same on every arch), to check the musl addons ask for nothing else.
const MUSL_LIBC = '/lib/x86_64-linux-musl/libc.so'

const READELF_MACHINE: Record<string, string> = { 'x86-64': 'Advanced Micro Devices X86-64', aarch64: 'AArch64' }

function glibcVersions(versions: Record<string, string[]>): number[][] {
  return Object.values(versions).flat().map((v) => /^GLIBC_(\d+)\.(\d+)(?:\.(\d+))?$/.exec(v)).filter((m) => m !== null).map((m) => [Number(m![1]), Number(m![2]), Number(m![3] ?? 0)])
}

/** The highest of x.y.z versions, written as glibc does (2.28, 2.2.5); null for none. */
function highest(versions: number[][]): string | null {
  const top = [...versions].sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!).at(-1)
  return top ? (top[2] ? top.join('.') : `${top[0]}.${top[1]}`) : null
}

const atMostBaseline = ([major, minor]: number[]) => major! < BASELINE[0]! || (major === BASELINE[0] && minor! <= BASELINE[1]!)

describe('package.json', () => {
  // An install that never fails (issue 29 item 3): `os` names every system a prebuild is made for
  // and the BSDs (kqueue, built at install where a compiler is there); no `cpu`, since a machine
  // without a prebuild (32-bit ARM...) still installs and runs on the JavaScript fallbacks.
  it('os names the systems prebuilds are made for (scripts/prebuild/targets.mjs) and the BSDs; no cpu refuses an install', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
    expect([...pkg.os].sort()).toEqual([...new Set([...rows.map((r) => r.target.os), 'freebsd', 'openbsd', 'netbsd'])].sort())
    expect(pkg.cpu).toBeUndefined()
    expect(rows.map((r) => r.target.name)).toEqual(['linux-x64-glibc', 'linux-x64-musl', 'linux-arm64-glibc', 'linux-arm64-musl', 'darwin-x64', 'darwin-arm64', 'win32-x64'])
  })
})

describe('prebuilds/, as readelf reads them', () => {
  for (const row of rows.filter((r) => r.target.os === 'linux')) {
    const { target } = row
    it(`${target.name}: ${target.addon} and the helpers beside it`, (ctx) => {
      if (!existsSync(join(PREBUILDS, target.dir))) return ctx.skip(`prebuilds/${target.dir} is not built (a fresh clone): npm run prebuild makes it`)
      if (!haveReadelf) return ctx.skip('no readelf here (binutils)')
      // Built as a whole folder: a half folder is a broken build, never a skip.
      expect(row.missing).toEqual([])

      const addon = readelf(join(PREBUILDS, target.dir, target.addon))
      expect(addon.machine).toBe(READELF_MACHINE[target.machine])
      expect(addon.type).toBe('DYN')
      expect(addon.interpreter).toBeNull()
      if (target.libc === 'glibc') {
        const glibc = glibcVersions(addon.versions)
        expect(glibc.length).toBeGreaterThan(0)
        expect(glibc.filter((v) => !atMostBaseline(v)).map((v) => v.join('.'))).toEqual([])
        // glibc's own libraries only: no libstdc++ (RHEL 8's is older than a recent g++'s).
        for (const lib of addon.needed) expect(lib).toMatch(/^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux-[\w-]+\.so\.[12])$/)
        expect(Object.keys(addon.versions).filter((l) => /stdc\+\+|gcc_s/.test(l))).toEqual([])
      } else {
        // musl: no symbol versions at all, and only libc.so (musl's loader maps it to itself).
        expect(addon.versions).toEqual({})
        expect(addon.needed).toEqual(['libc.so'])
        // Every symbol it needs is Node-API's (from Node) or musl's: nothing glibc-only.
        if (existsSync(MUSL_LIBC)) {
          const musl = dynamicSymbols(MUSL_LIBC).defined
          const needs = dynamicSymbols(join(PREBUILDS, target.dir, target.addon)).undefined
          expect(needs.length).toBeGreaterThan(0)
          expect(needs.filter((sym) => !/^(napi|node_api)_/.test(sym) && !musl.has(sym))).toEqual([])
        } else {
          ctx.annotate(`${MUSL_LIBC} is not here (apt-get install musl-tools): the symbols were not checked against musl's`)
        }
      }
      // It exports what Node looks up and nothing else (not the static libc++ and compiler-rt in it).
      expect([...dynamicSymbols(join(PREBUILDS, target.dir, target.addon)).defined].filter((sym) => sym && !/^(_init|_fini)$/.test(sym)).sort()).toEqual(['napi_register_module_v1', 'node_api_module_get_api_version_v1'])
      // The build's gate (check.mjs, run by prepack) reads the same facts and finds nothing wrong.
      expect(row.problems).toEqual([])
      const gate = row.files[target.addon]!
      expect(gate.needed).toEqual(addon.needed)
      expect(gate.glibcMax ?? null).toBe(highest(glibcVersions(addon.versions)))

      // The helpers: static (no interpreter, nothing needed), so they run beside either addon.
      for (const h of HELPERS) {
        const helper = readelf(join(PREBUILDS, target.dir, h))
        expect(helper.machine, h).toBe(READELF_MACHINE[target.machine])
        expect(helper.type, h).toBe('EXEC')
        expect(helper.interpreter, h).toBeNull()
        expect(helper.needed, h).toEqual([])
        expect(row.files[h]!.static, h).toBe(true)
      }
    })
  }

  for (const row of rows.filter((r) => r.target.os !== 'linux')) {
    const { target } = row
    it(`${target.name}: built elsewhere; when present, for ${target.machine} and complete`, (ctx) => {
      if (!existsSync(join(PREBUILDS, target.dir, target.addon))) return ctx.skip(`prebuilds/${target.dir} is not here (${target.how === 'macos' ? 'built on macOS runners by .github/workflows/prebuild.yml' : 'npm run prebuild:win32 or the workflow\'s windows job'})`)
      expect(row.missing).toEqual([])
      expect(row.problems).toEqual([])
      for (const facts of Object.values(row.files)) expect(facts).toMatchObject({ format: target.os === 'win32' ? 'pe' : 'macho', machine: target.machine })
    })
  }
})
