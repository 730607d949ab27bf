// Builds dist/:
// - dist/cjs/*.d.ts: tsc type-checks lib/ and emits the declarations;
// - dist/cjs/index.js: esbuild bundles what spawn() and watchExit() need (and node-gyp-build, the
//   addon loader) into one CommonJS file, and the rest of lib/ into parts (dist/cjs/parts/), each
//   loaded on first use (scripts/build-parts.mjs): one file to resolve and little to compile keeps
//   `require('reapkit')` fast. Not minified, with source maps (*.js.map) that map every line back
//   to lib/;
// - dist/esm/index.mjs: a thin ESM wrapper over that same CommonJS module. One implementation means
//   one copy of the process-global state (the exit watcher, the armed death signal) even when an
//   application loads reapkit through both `import` and `require` (Node's "dual package hazard").
import { execFileSync } from 'node:child_process'
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
// Built into a scratch folder and swapped in at the end, so that whatever loads dist/ meanwhile (a
// running test or bench) never finds it half-built.
const final = join(root, 'dist')
const dist = join(root, `.dist-build-${process.pid}`)
rmSync(dist, { recursive: true, force: true })
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json'), '--emitDeclarationOnly', '--outDir', join(dist, 'cjs')], {
  stdio: 'inherit',
})
const esbuild = await import('esbuild')
const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  // Readable bundles: one statement a line, names kept, not minified, so that an error prints its
  // own `throw` line (not a 27,000-character one) and a stack frame names a line worth opening. The
  // maps carry lib/'s sources (sourcesContent), so `node --enable-source-maps` shows lib/ frames.
  sourcemap: true,
  sourcesContent: true,
  minify: false,
  keepNames: false, // nothing is minified, so every name stays as written (keepNames adds wrappers)
  legalComments: 'eof',
  logLevel: 'warning',
  // Optional peer dependencies, loaded at run time from the user's install, never bundled.
  external: ['prom-client'],
}
// The secondary entries (reapkit/mcp, reapkit/testing) require the main bundle at run time
// (./index.js), so that every entry shares one instance of the process-global state.
const secondary = ['mcp', 'testing']
// The `reapkit doctor` command and `reapkit ps|logs|restart|stop|top` (bin/reapkit runs them with
// node) and reapkit-win's container part (bin/reapkit-win.cjs loads it): scripts, not exports.
const commands = ['doctor-cli', 'control-cli', 'reapkit-win-containers']
// Each entry's source (an output name is a public path; the source lives in its folder).
const sources = { mcp: 'mcp/index.ts', testing: 'testing.ts', 'doctor-cli': 'cli/doctor.ts', 'control-cli': 'cli/control.ts', 'reapkit-win-containers': 'cli/win-containers.ts' }
const mainEntry = join(root, 'lib', 'index.ts')
for (const entry of [...secondary, ...commands]) {
  await esbuild.build({
    ...common,
    entryPoints: [join(root, 'lib', sources[entry])],
    outfile: join(dist, 'cjs', `${entry}.js`),
    plugins: [{
      name: 'core-external',
      setup(build) {
        // Whatever folder imports it ('./index', '../index'), lib/index.ts stays the main bundle.
        build.onResolve({ filter: /(^|\/)index$/ }, (a) =>
          join(a.resolveDir, a.path) === mainEntry.replace(/\.ts$/, '') ? { path: './index.js', external: true } : undefined)
      },
    }],
  })
}
// tsc writes an entry's declarations beside its source (dist/cjs/mcp/index.d.ts); the package's
// exports name dist/cjs/<entry>.d.ts.
for (const entry of secondary) {
  const src = sources[entry].replace(/\.ts$/, '')
  if (src !== entry) writeFileSync(join(dist, 'cjs', `${entry}.d.ts`), `export * from './${src}.js'\n`)
}
// The main entry in parts: index.js holds what spawn() and watchExit() need, parts/ the rest, each
// loaded on first use (scripts/build-parts.mjs says how, and what stays one instance).
const { buildMain } = await import('./build-parts.mjs')
await buildMain({ esbuild, root, outDir: join(dist, 'cjs'), scratch: join(dist, 'scratch'), common })
rmSync(join(dist, 'scratch'), { recursive: true, force: true })
writeFileSync(join(dist, 'cjs', 'package.json'), '{ "type": "commonjs" }\n')

const require = createRequire(import.meta.url)
mkdirSync(join(dist, 'esm'), { recursive: true })
// Each ESM entry takes its CommonJS module with require (createRequire), not `import cjs from`: an
// import of CommonJS has Node scan the file's source for its export names (cjs-module-lexer), about
// 7 ms for index.js, which is most of what `import 'reapkit'` cost (bench/require.mjs). The names
// are listed here instead, read from the module itself. Reading each one is free: no export of the
// main entry is a getter that loads a part (a class of a part is a shell, build-parts.mjs).
// A bundler that makes CommonJS of an ESM app (esbuild --format=cjs) leaves import.meta empty, and
// createRequire(undefined) threw: there the literal require() below is what it bundles and calls.
// Told apart by import.meta.url, which every ESM loader sets, and not by `typeof require`: `node -e`
// defines a global require (and some ESM apps make one), relative to another folder than this one.
const esmEntry = (entry, what) => {
  const names = Object.keys(require(join(dist, 'cjs', `${entry}.js`))).filter((n) => n !== '__esModule').sort()
  writeFileSync(
    join(dist, 'esm', `${entry}.mjs`),
    `// Generated by scripts/build-ts.mjs: ${what} as ESM, over the CommonJS build (one instance).\n` +
      `import { createRequire } from 'node:module'\n\n` +
      `const cjs = import.meta.url ? createRequire(import.meta.url)('../cjs/${entry}.js') : require('../cjs/${entry}.js')\n\n` +
      `export const {\n${names.map((n) => `  ${n},`).join('\n')}\n} = cjs\n`,
  )
  writeFileSync(join(dist, 'esm', `${entry}.d.mts`), `export * from '../cjs/${entry}.js'\n`)
  return names
}
const names = esmEntry('index', 'reapkit')
for (const entry of secondary) esmEntry(entry, `reapkit/${entry}`)
const old = join(root, `.dist-old-${process.pid}`)
try {
  renameSync(final, old)
} catch (err) {
  if (err.code !== 'ENOENT') throw err // no previous build is fine; anything else is not
}
renameSync(dist, final)
rmSync(old, { recursive: true, force: true })
console.log(`dist/: CommonJS build and ESM wrapper (${names.length} exports)`)
