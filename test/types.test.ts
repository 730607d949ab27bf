// The published types (dist/**/*.d.ts, as `npm run build:ts` makes them) in a user's TypeScript
// project: the fixtures in test/types/ use the package as its README shows (the core API, both MCP
// SDK lines' servers, clients, health check and HTTP drain), imported by name as a user imports it
// (the package's own "exports", ESM and CommonJS), and must compile under each setting with each
// compiler:
//   (a) strict;
//   (b) strict + exactOptionalPropertyTypes + noUncheckedIndexedAccess;
//   (c) (b) + "types": [] (no global types but what a file references; TypeScript 7's default).
// skipLibCheck is off, so the .d.ts themselves are checked too, not only the calls into them; lines
// marked @ts-expect-error in the fixtures make sure the types refuse what they should (types that
// fell to `any` would fail the run). One tsc process per setting and compiler, over all fixtures.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from './helpers'

const FIXTURES = join(ROOT, 'test', 'types')
/** The compilers: the project's own (5.x) and TypeScript 7 (the native one), both devDependencies. */
const COMPILERS = [
  { major: 5, dir: join(ROOT, 'node_modules', 'typescript') },
  { major: 7, dir: join(ROOT, 'node_modules', 'typescript-7') },
]
const SETTINGS = [
  { name: 'strict', config: 'tsconfig.strict.json' },
  { name: 'strict + exactOptionalPropertyTypes + noUncheckedIndexedAccess', config: 'tsconfig.exact.json' },
  { name: 'the same with "types": []', config: 'tsconfig.bare.json' },
]
/** A tsc run over the SDKs' declarations takes about 15 s of CPU with 5.x, 4 s with 7, ~0.9 GB. */
const TSC_TIMEOUT_MS = 180_000

function tsc(dir: string, args: string[]): { status: number | null; output: string } {
  const r = spawnSync(process.execPath, [join(dir, 'bin', 'tsc'), ...args], { cwd: ROOT, encoding: 'utf8', timeout: TSC_TIMEOUT_MS })
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? `\n${r.error.message}` : ''}`.trim() }
}

describe('the published types in a strict project', () => {
  it('every fixture is in every setting, and the settings are what they say', () => {
    const configs = SETTINGS.map((s) => JSON.parse(readFileSync(join(FIXTURES, s.config), 'utf8').replace(/^\s*\/\/.*$/gm, '')) as { compilerOptions: Record<string, unknown>; files: string[] })
    const fixtures = configs[0]!.files
    expect(fixtures).toEqual(expect.arrayContaining(['core.mts', 'core.cts', 'mcp-server-v1.mts', 'mcp-server-v2.mts', 'mcp-client-v1.mts', 'mcp-client-v2.mts']))
    for (const c of configs) {
      expect(c.files).toEqual(fixtures)
      expect(c.compilerOptions).toMatchObject({ strict: true, skipLibCheck: false, noEmit: true })
    }
    expect(configs[0]!.compilerOptions).not.toHaveProperty('exactOptionalPropertyTypes')
    expect(configs[1]!.compilerOptions).toMatchObject({ exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true })
    expect(configs[1]!.compilerOptions).not.toHaveProperty('types')
    expect(configs[2]!.compilerOptions).toMatchObject({ exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, types: [] })
  })

  for (const compiler of COMPILERS) {
    describe(`TypeScript ${compiler.major}`, () => {
      it('is the compiler it says', () => {
        const r = tsc(compiler.dir, ['--version'])
        expect(r.output).toMatch(new RegExp(`^Version ${compiler.major}\\.`))
      })

      for (const setting of SETTINGS) {
        it(`${setting.name}: the fixtures compile`, () => {
          const r = tsc(compiler.dir, ['-p', join(FIXTURES, setting.config), '--pretty', 'false'])
          expect(r.output).toBe('')
          expect(r.status).toBe(0)
        }, TSC_TIMEOUT_MS + 10_000)
      }
    })
  }
})
