// The published types (dist/**/*.d.ts, as `npm run build:ts` makes them) in a user's TypeScript
// project: the fixtures in test/types/ use the package as its README shows (the core API, both MCP
// SDK lines' servers, clients, health check and HTTP drain), imported by name as a user imports it
// (the package's own "exports", ESM and CommonJS), and must compile under each setting with each
// compiler:
//   (a) strict;
//   (b) strict + exactOptionalPropertyTypes + noUncheckedIndexedAccess;
//   (c) (b) + "types": [] (no global types but what a file references) and the rest of the checks
//       `tsc --init` turns on (TypeScript 5.9 and 7: verbatimModuleSyntax, isolatedModules...).
// Two tsc runs a setting: the core fixtures with skipLibCheck off, so that every .d.ts the package's
// entries reach is checked too, not only the calls into them; the MCP fixtures with it on, as tsc
// --init has it (the SDKs' own .d.ts are not ours to check, and cost tsc 5.x three times the rest).
// Lines marked @ts-expect-error in the fixtures make sure the types refuse what they should (types
// that fell to `any` would fail the run).
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
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
  { name: 'strict', config: 'strict' },
  { name: 'strict + exactOptionalPropertyTypes + noUncheckedIndexedAccess', config: 'exact' },
  { name: 'the same with "types": []', config: 'bare' },
]
/** Each run takes 1-5 s of CPU here (5.x the most) and up to ~0.3 GB. */
const TSC_TIMEOUT_MS = 120_000

interface Config {
  extends?: string
  compilerOptions: Record<string, unknown>
  files: string[]
}
const readConfig = (file: string): Config => JSON.parse(readFileSync(join(FIXTURES, file), 'utf8').replace(/^\s*\/\/.*$/gm, '')) as Config

function tsc(dir: string, args: string[]): { status: number | null; output: string } {
  const r = spawnSync(process.execPath, [join(dir, 'bin', 'tsc'), ...args], { cwd: ROOT, encoding: 'utf8', timeout: TSC_TIMEOUT_MS })
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? `\n${r.error.message}` : ''}`.trim() }
}

describe('the published types in a strict project', () => {
  it('every fixture is in every setting, and the settings are what they say', () => {
    const fixtures = readdirSync(FIXTURES).filter((f) => /\.[mc]ts$/.test(f)).sort()
    expect(fixtures).toEqual(expect.arrayContaining(['core.cts', 'core.mts', 'mcp-client-v1.mts', 'mcp-client-v2.mts', 'mcp-server-v1.mts', 'mcp-server-v2.mts']))
    const options = SETTINGS.map(({ config }) => {
      const core = readConfig(`tsconfig.${config}.json`)
      const mcp = readConfig(`tsconfig.${config}-mcp.json`)
      expect([...core.files, ...mcp.files].sort()).toEqual(fixtures)
      expect(core.compilerOptions).toMatchObject({ strict: true, skipLibCheck: false, noEmit: true })
      expect(mcp).toMatchObject({ extends: `./tsconfig.${config}.json`, compilerOptions: { skipLibCheck: true } })
      expect(Object.keys(mcp.compilerOptions)).toEqual(['skipLibCheck'])
      return core.compilerOptions
    })
    expect(options[0]).not.toHaveProperty('exactOptionalPropertyTypes')
    expect(options[1]).toMatchObject({ exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true })
    expect(options[1]).not.toHaveProperty('types')
    expect(options[2]).toMatchObject({ ...options[1], types: [] })
  })

  for (const compiler of COMPILERS) {
    describe(`TypeScript ${compiler.major}`, () => {
      it('is the compiler it says', () => {
        const r = tsc(compiler.dir, ['--version'])
        expect(r.output).toMatch(new RegExp(`^Version ${compiler.major}\\.`))
      })

      for (const setting of SETTINGS) {
        it(`${setting.name}: the fixtures compile`, () => {
          for (const config of [setting.config, `${setting.config}-mcp`]) {
            const r = tsc(compiler.dir, ['-p', join(FIXTURES, `tsconfig.${config}.json`), '--pretty', 'false'])
            expect(r.output, `tsconfig.${config}.json`).toBe('')
            expect(r.status, `tsconfig.${config}.json`).toBe(0)
          }
        }, 2 * TSC_TIMEOUT_MS + 10_000)
      }
    })
  }
})
