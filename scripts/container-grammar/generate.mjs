// Writes native/supervise/run_grammar_table.h from lib/mechanisms/container/grammar.ts (header.ts
// renders it), or with --check exits 1 when the committed header differs. A development step: the
// header is committed, because a source build on a user's machine (node-gyp at install, cmake-js)
// has neither TypeScript nor esbuild. esbuild (a devDependency) bundles header.ts and the table into
// one ES module, loaded from memory.
//
//   node scripts/container-grammar/generate.mjs          write the header
//   node scripts/container-grammar/generate.mjs --check  compare only
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const bundled = await build({
  entryPoints: [join(root, 'scripts', 'container-grammar', 'header.ts')],
  bundle: true,
  write: false,
  format: 'esm',
  platform: 'node',
  logLevel: 'warning',
})
const source = bundled.outputFiles[0].text
const { grammarHeader, HEADER_PATH } = await import(`data:text/javascript;base64,${Buffer.from(source).toString('base64')}`)
const file = join(root, HEADER_PATH)
const wanted = grammarHeader()

if (process.argv.includes('--check')) {
  let committed = ''
  try {
    committed = readFileSync(file, 'utf8')
  } catch {}
  if (committed !== wanted) {
    console.error(`${HEADER_PATH} is not what lib/mechanisms/container/grammar.ts generates: run node scripts/container-grammar/generate.mjs`)
    process.exit(1)
  }
  console.log(`${HEADER_PATH} is up to date`)
} else {
  writeFileSync(file, wanted)
  console.log(`wrote ${HEADER_PATH}`)
}
