// The main entry, built in parts (issue 29 item 6), for scripts/build-ts.mjs.
//
// require('reapkit') loads and compiles dist/cjs/index.js alone: what spawn() and watchExit() need,
// and the small things any caller may touch at once (errors, signals, capabilities). Every other
// module lib/index.ts exports from is a part, dist/cjs/parts/<name>.js, loaded on first use:
// - a function of a part is, in index.js, a stub of the same name and length (async where the
//   function is, with util.promisify.custom where it has one) that loads the part on its first
//   call and calls through: validation errors still throw synchronously, from the same code, before
//   the function does anything (an ESM `import` of reapkit loads no part either);
// - a class of a part (Supervisor) is, in index.js, a small class of the same name (classShell):
//   its constructor and its methods (each of its original's kind: async, async generator) load the
//   part and call through, so reading the export loads nothing (an ESM import reads every export),
//   and `instanceof`, `extends` and `.constructor` see the one class every caller gets;
// - each lib/mechanisms/lazy/*.ts (one namespace import and a function that returns it) becomes a
//   function that requires that module's part on its first call: how eager code (spawn) reaches lazy
//   code (the container part) without compiling it at require.
// Every part loads through lib/ground/load-part.ts, which keeps one descriptor for it: a stop may be
// the first call of its part, and come when the process ran out of descriptors.
// The parts are one esbuild build with code splitting, so a module that two parts share is one copy
// (parts/chunk-*.js). A module the eager bundle holds is never copied into a part: the part reaches
// it through index.js, which hands its modules over under Symbol.for('reapkit.internals'), so there
// is one instance of each module, and of its process-global state (the exit watcher, the registries).
// The copy of index.js that loads a part is the one it binds to (load-part.ts), whatever require's
// cache holds by then.
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { promisify, types } from 'node:util'

/**
 * The modules of lib/index.ts's exports that require('reapkit') loads at once: spawn() and
 * watchExit() and what they stand on, and small modules of constants and error classes: a constant
 * of a part could only be a getter, which would load the part when read (an ESM import reads every
 * export), and an error class extends Error, which a shell (classShell) does not. Everything else
 * index.ts exports is a part.
 */
export const EAGER = [
  'ground/native',
  'ground/signals',
  'ground/errors',
  'ground/logger',
  'mechanisms/prctl',
  'mechanisms/handle',
  'mechanisms/exit',
  'mechanisms/spawn',
  'mechanisms/group',
  'mechanisms/container/engine-error',
  'policies/keepalive/types',
]

const INTERNALS = "Symbol.for('reapkit.internals')"

/**
 * Modules of pure data (no state, nothing done at load but building constants): a part may keep a
 * copy of its own rather than take the eager bundle's, which then holds only what it uses of them
 * (spawn() reads grammar.ts's ENGINES; the parser's flag tables stay with the container part).
 */
const PURE_DATA = new Set(['lib/mechanisms/container/grammar.ts'])

function moduleFile(lib, fromDir, spec) {
  const base = resolve(fromDir, spec)
  for (const candidate of [`${base}.ts`, join(base, 'index.ts')]) {
    try {
      readFileSync(candidate)
      return candidate
    } catch {
      // next candidate
    }
  }
  throw new Error(`build-parts: cannot find ${spec} from ${relative(lib, fromDir) || '.'}`)
}

/**
 * lib/index.ts's value exports: { name, local, file, line, column } (where index.ts names it, 0-based).
 * Only `export { ... } from '...'` is understood.
 */
function indexExports(root, lib) {
  const ts = createRequire(join(root, 'package.json'))('typescript')
  const file = join(lib, 'index.ts')
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  const out = []
  out.source = sf.text
  for (const st of sf.statements) {
    if (!ts.isExportDeclaration(st)) {
      if (ts.canHaveModifiers(st) && ts.getModifiers(st)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) {
        throw new Error(`build-parts: lib/index.ts declares an export itself; re-export it from its module instead: ${st.getText(sf).slice(0, 80)}`)
      }
      continue
    }
    if (st.isTypeOnly) continue
    if (!st.moduleSpecifier || !st.exportClause || !ts.isNamedExports(st.exportClause)) {
      throw new Error(`build-parts: lib/index.ts: only \`export { ... } from '...'\` is understood: ${st.getText(sf).slice(0, 80)}`)
    }
    const from = moduleFile(lib, lib, st.moduleSpecifier.text)
    for (const el of st.exportClause.elements) {
      if (el.isTypeOnly) continue
      const at = sf.getLineAndCharacterOfPosition(el.name.getStart(sf))
      out.push({ name: el.name.text, local: (el.propertyName ?? el.name).text, file: from, line: at.line, column: at.character })
    }
  }
  return out
}

/** lib/mechanisms/lazy/*.ts: { file, name, target }, each checked for its one shape. */
function lazyAccessors(lib) {
  const dir = join(lib, 'mechanisms', 'lazy')
  return readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => {
      const file = join(dir, f)
      const text = readFileSync(file, 'utf8')
      const imports = [...text.matchAll(/^import \* as part from '([^']+)'$/gm)]
      const fn = [...text.matchAll(/^export default function (\w+)\(\): typeof part \{\n {2}return part\n\}$/gm)]
      if (imports.length !== 1 || fn.length !== 1 || /^import (?!\* as part )/m.test(text)) {
        throw new Error(`build-parts: ${relative(lib, file)} must be one \`import * as part from '...'\` and \`export default function name(): typeof part { return part }\``)
      }
      return { file, name: f.slice(0, -3), fn: fn[0][1], target: moduleFile(lib, dir, imports[0][1]) }
    })
}

/**
 * In the eager bundle, each lazy accessor requires its part on first call; node-gyp-build (the addon
 * loader's fallback search, which native.ts requires only when the addon is in neither usual place)
 * is a part of its own.
 */
function accessorPlugin(accessors, partOf, loader) {
  const byFile = new Map(accessors.map((a) => [a.file, a]))
  return {
    name: 'reapkit-lazy-accessors',
    setup(build) {
      build.onResolve({ filter: /^\.\/parts\// }, (args) => ({ path: args.path, external: true }))
      build.onResolve({ filter: /^node-gyp-build$/ }, () => ({ path: './parts/node-gyp-build.js', external: true }))
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        const a = byFile.get(args.path)
        if (!a) return undefined
        const file = `./parts/${partOf.get(a.target)}.js`
        // Relative, as the source maps keep this text: no folder of the building machine in them.
        return {
          contents: `import { loadPart } from ${JSON.stringify(relativeSpec(dirname(a.file), loader))}\nlet part\nexport default function ${a.fn}() {\n  return (part ??= loadPart(() => require(${JSON.stringify(file)})))\n}\n`,
          loader: 'js',
        }
      })
    },
  }
}

/**
 * In the parts' build: a module the eager bundle holds is taken from it, never copied. The build's
 * id is checked first: a part that meets an index.js of another build (the package replaced on disk
 * while a process ran, which then loads a part for the first time) says so, rather than call
 * functions that are not there.
 */
function fromEagerPlugin(root, eager, used, buildId) {
  const again = Symbol('resolving')
  const internals = [
    // The copy of index.js whose loadPart() is loading this (after a cache reset, require's cache
    // may hold another); required only when a part is required by hand.
    `const internals = globalThis[Symbol.for('reapkit.loadingInternals')] ?? require('../index.js')[${INTERNALS}]`,
    `if (internals?.build !== ${JSON.stringify(buildId)}) {`,
    "  throw new Error('reapkit: dist/cjs/parts/ is not from the build of the dist/cjs/index.js this process loaded (was the package replaced while the process ran?); restart the process')",
    '}',
    'module.exports = internals.modules()',
  ].join('\n')
  return {
    name: 'reapkit-from-eager',
    setup(build) {
      build.onResolve({ filter: /^\.\.\/index\.js$/, namespace: 'reapkit-eager' }, () => ({ path: '../index.js', external: true }))
      build.onResolve({ filter: /^reapkit:internals$/, namespace: 'reapkit-eager' }, () => ({ path: 'reapkit:internals', namespace: 'reapkit-eager' }))
      build.onResolve({ filter: /^\./ }, async (args) => {
        if (args.namespace !== 'file' || args.pluginData === again) return undefined
        const r = await build.resolve(args.path, { resolveDir: args.resolveDir, kind: args.kind, importer: args.importer, pluginData: again })
        if (r.errors.length > 0) return { errors: r.errors }
        const rel = relative(root, r.path)
        if (!eager.has(rel) || PURE_DATA.has(rel)) return { path: r.path }
        used.add(rel)
        return { path: rel, namespace: 'reapkit-eager' }
      })
      build.onLoad({ filter: /.*/, namespace: 'reapkit-eager' }, (args) => ({
        contents: args.path === 'reapkit:internals' ? internals : `module.exports = require('reapkit:internals')[${JSON.stringify(args.path)}]\n`,
        loader: 'js',
      }))
    },
  }
}

/** `to` as an import specifier relative to the folder `from` (./x or ../x, forward slashes). */
function relativeSpec(from, to) {
  const rel = relative(from, to).split(sep).join('/')
  return rel.startsWith('../') ? rel : `./${rel}`
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
function vlq(n) {
  let v = n < 0 ? (-n << 1) | 1 : n << 1
  let out = ''
  do {
    let digit = v & 31
    v >>>= 5
    if (v) digit |= 32
    out += BASE64[digit]
  } while (v)
  return out
}

/**
 * A class of a part (Supervisor) as a small class of the same name in index.js: its constructor
 * builds the part's class (Reflect.construct with new.target, so the object's prototype is the
 * shell's, or a subclass's), and each method of the part's prototype is a method of the shell's that
 * calls the part's on `this`. So the class an import or require hands out is there before its part
 * loads (an ESM import, which reads every export, loads nothing), and it is the one class every
 * caller sees: `instanceof`, `.constructor`, `extends` and a spy on its prototype all meet the shell.
 * The part's private fields live on the object its constructor built, where its methods find them.
 * Each method is of its original's kind, so that util.types and a check of the function's kind (an
 * AsyncFunction, an AsyncGeneratorFunction) say what they say of the part's: an async method
 * returns a promise resolved with the part's (a promise of its own, as any async function's); a
 * generator method delegates to the part's iterator with `yield*`, which hands next(), return() and
 * throw() to it as they come, so a caller sees the part's values, its completion and its `finally`
 * at the same moments (test/supervisor-shell.test.ts runs both side by side). The part's iterator
 * is made at the first next(), as the part's own body would only run then: a call alone does
 * nothing in either. What differs: the iterator is the shell's object, not the part's, and each
 * step takes a few more microtasks.
 * Shapes this does not cover (accessors, static members, symbol keys, another base class) fail the
 * build, not a user.
 */
export function classShell(e, value, load) {
  const events = createRequire(import.meta.url)('node:events')
  const base = Object.getPrototypeOf(value)
  if (base !== Function.prototype && base !== events.EventEmitter) {
    throw new Error(`build-parts: class ${e.name} extends ${base?.name}: its shell in index.js extends EventEmitter or nothing; add the base to classShell`)
  }
  const statics = Reflect.ownKeys(value).filter((k) => !['length', 'name', 'prototype'].includes(k))
  if (statics.length > 0) throw new Error(`build-parts: class ${e.name} has static members (${statics.map(String).join(', ')}): classShell does not forward them`)
  const params = (n) => Array.from({ length: n }, (_, i) => `a${i}`).join(', ')
  const methods = []
  for (const key of Reflect.ownKeys(value.prototype)) {
    if (key === 'constructor') continue
    const d = Object.getOwnPropertyDescriptor(value.prototype, key)
    const where = `build-parts: ${e.name}.prototype[${String(key)}]`
    if (d.get || d.set) throw new Error(`${where} is an accessor (a getter or setter): a shell cannot forward it (its getter would load the part whenever anything reads it, from the prototype too); make it a method`)
    if (typeof key !== 'string') throw new Error(`${where} is named by a symbol: classShell forwards methods named by a string only`)
    if (typeof d.value !== 'function') throw new Error(`${where} is a ${typeof d.value}, not a method: classShell forwards methods only`)
    const real = `${load}.${e.local}.prototype.${key}.apply(this, arguments)`
    const generator = types.isGeneratorFunction(d.value)
    const prefix = (types.isAsyncFunction(d.value) ? 'async ' : '') + (generator ? '*' : '')
    methods.push(`${prefix}${key}(${params(d.value.length)}) { ${generator ? `yield* ${real}` : `return ${real}`} }`)
  }
  const ext = base === events.EventEmitter ? ' extends ShellBaseEventEmitter' : ''
  return [
    ...(ext ? ["import { EventEmitter as ShellBaseEventEmitter } from 'node:events'"] : []),
    `export class ${e.name}${ext} { constructor(${params(value.length)}) { return Reflect.construct(${load}.${e.local}, arguments, new.target) } ${methods.join(' ')} }`,
  ]
}

/**
 * The eager entry (an ESM module esbuild bundles into index.js): index.ts's eager exports; each
 * part's functions as stubs and its classes as shells (classShell); and the modules the parts
 * take from it (`handOver`). Every line maps (an inline source map esbuild chains into
 * index.js.map) to the place in lib/index.ts that exports what the line defines, so a stub's stack
 * frame names lib/index.ts.
 */
function eagerEntry(root, exports, eagerFiles, partOf, reference, handOver, buildId) {
  const lib = join(root, 'lib') // the entry's resolveDir: its imports are relative to it
  const lines = [[`import { bindInternals, loadPart } from ${JSON.stringify(relativeSpec(lib, join(lib, 'ground', 'load-part.ts')))}`, 0, 0]] // [code, index.ts line, column]
  const at = (e) => [e.line, e.column]
  for (const e of exports.filter((x) => eagerFiles.has(x.file))) {
    lines.push([`export { ${e.local === e.name ? e.name : `${e.local} as ${e.name}`} } from ${JSON.stringify(relativeSpec(lib, e.file))}`, ...at(e)])
  }
  const lazy = exports.filter((x) => !eagerFiles.has(x.file))
  const id = (part) => `part_${part.replace(/\W/g, '_')}`
  for (const part of [...new Set(lazy.map((e) => partOf.get(e.file)))].sort()) {
    const first = lazy.find((e) => partOf.get(e.file) === part)
    lines.push([`let ${id(part)}_`, ...at(first)])
    lines.push([`function ${id(part)}() { return (${id(part)}_ ??= loadPart(() => require(${JSON.stringify(`./parts/${part}.js`)}))) }`, ...at(first)])
  }
  for (const e of lazy) {
    const value = reference[e.name]
    const load = `${id(partOf.get(e.file))}()`
    const isClass = typeof value === 'function' && /^class\b/.test(Function.prototype.toString.call(value))
    if (typeof value === 'function' && !isClass) {
      const params = Array.from({ length: value.length }, (_, i) => `a${i}`).join(', ')
      // An async original (a stop, a doctor) never throws: it rejects, its part failing to load
      // included, and is no constructor; its stub is async too. The others are plain functions,
      // constructible as the originals are.
      const kind = types.isAsyncFunction(value) ? 'async function' : 'function'
      lines.push([`export ${kind} ${e.name}(${params}) { return ${load}.${e.local}.apply(this, arguments) }`, ...at(e)])
      // util.promisify's own form (exec's { stdout, stderr }): the stub has it too, read from the part
      // when util.promisify asks for it.
      if (typeof value[promisify.custom] === 'function') {
        lines.push([`Object.defineProperty(${e.name}, Symbol.for('nodejs.util.promisify.custom'), { __proto__: null, get: () => ${load}.${e.local}[Symbol.for('nodejs.util.promisify.custom')] })`, ...at(e)])
      }
    } else if (isClass) {
      for (const code of classShell(e, value, load)) if (!lines.some(([c]) => c === code)) lines.push([code, ...at(e)])
    } else {
      throw new Error(`build-parts: ${e.name} (${relative(lib, e.file)}) is a ${typeof value}, neither a function nor a class: a part can export only those (add its module to EAGER)`)
    }
  }
  // The hand-over: each module's exports by name, as getters (live, as an ESM binding is), in objects
  // made when the first part asks (namespace objects of `import *` would be built at every require).
  const shared = [...handOver].sort(([a], [b]) => (a < b ? -1 : 1))
  const objects = []
  shared.forEach(([rel, names], i) => {
    if (names.length === 0) return
    lines.push([`import { ${names.map((n) => `${n} as h${i}_${n}`).join(', ')} } from ${JSON.stringify(relativeSpec(lib, join(root, rel)))}`, 0, 0])
    objects.push(`${JSON.stringify(rel)}: { __proto__: null, ${names.map((n) => `get ${n}() { return h${i}_${n} }`).join(', ')} }`)
  })
  lines.push(['let partsHandedOver', 0, 0])
  lines.push([`const handOverToParts = () => (partsHandedOver ??= { ${objects.join(', ')} })`, 0, 0])
  // After every module has run (an entry's own statements come last): parts load later, on calls.
  lines.push([`Object.defineProperty(module.exports, ${INTERNALS}, { __proto__: null, value: { build: ${JSON.stringify(buildId)}, modules: handOverToParts } })`, 0, 0])
  lines.push([`bindInternals(module.exports[${INTERNALS}])`, 0, 0])
  let prev = [0, 0]
  const mappings = lines.map(([, line, column]) => {
    const seg = 'A' + 'A' + vlq(line - prev[0]) + vlq(column - prev[1])
    prev = [line, column]
    return seg
  })
  const map = { version: 3, sources: [join(root, 'lib', 'index.ts')], sourcesContent: [exports.source], names: [], mappings: mappings.join(';') }
  return `${lines.map(([code]) => code).join('\n')}\n//# sourceMappingURL=data:application/json;base64,${Buffer.from(JSON.stringify(map)).toString('base64')}\n`
}

/**
 * index.js's exports as one object of getters, not two: esbuild makes an object of getters
 * (`index_eager_exports`) and then copies it (`__toCommonJS`) into module.exports, whose getters
 * read the first object's, which costs about 0.2 ms of require('reapkit') (bench/require.mjs). Here
 * module.exports is that first object, with `__esModule` defined first as `__toCommonJS` does: the
 * same keys in the same order, each an enumerable, non-configurable getter of the live binding.
 * Line for line (the source map stays true); a change in esbuild's output is an error here.
 */
function flatExports(file) {
  const text = readFileSync(file, 'utf8')
  const made = /^var (\w+) = \{\};\n__export\(\1, \{$/m
  const found = made.exec(text)
  const copied = found && new RegExp(`^module\\.exports = __toCommonJS\\(${found[1]}\\);$`, 'm')
  if (!found || !copied.test(text) || new RegExp(`\\b${found[1]}\\b`, 'g').exec(text.replace(made, '').replace(copied, '')) !== null) {
    throw new Error(`build-parts: ${file}: esbuild's CommonJS exports (an object of getters copied by __toCommonJS) changed; see flatExports`)
  }
  const flat = text
    .replace(made, `var ${found[1]} = module.exports = __defProp({}, "__esModule", { __proto__: null, value: true });\n__export(${found[1]}, {`)
    .replace(copied, '// (module.exports is the object above: build-parts.mjs, flatExports)')
  writeFileSync(file, flat)
}

/**
 * esbuild's helpers, made safe against a polluted Object.prototype: a part loads after the host
 * ran, and whatever it polluted by then. __export walks its object of getters with for-in, which
 * also walks Object.prototype (a part died on `Getter must be a function`): own keys only, as
 * everything else reads options here. And every descriptor the helpers hand to defineProperty
 * (__export, __copyProps, __toCommonJS, __toESM) has no prototype: an inherited `value`, `get`,
 * `set` or `writable` made it an invalid descriptor, and every part failed to load.
 */
function safeHelpers(file) {
  const text = readFileSync(file, 'utf8')
  // (esbuild renames `name` when a module has one of its own: name2...)
  const unsafe = /for \(var (\w+) in all\)\n(\s+)__defProp\(target, \1, \{ get: all\[\1\], enumerable: true \}\);/g
  let safe = text.replace(unsafe, 'for (var $1 of Object.keys(all))\n$2__defProp(target, $1, { get: all[$1], enumerable: true });')
  if (/\bin all\)/.test(safe)) throw new Error(`build-parts: ${file}: esbuild's __export helper changed; make it read own keys only again`)
  // __defProp (or __defProp2...) with a literal descriptor: the helpers' calls, and only theirs
  // (the library's own code calls Object.defineProperty by that name).
  safe = safe.replace(/(\b__defProp\d*\((?:target|to|\{\}), (?:\w+|"\w+"), )\{ (?!__proto__)/g, '$1{ __proto__: null, ')
  if (/\b__defProp\d*\([^;\n]*\{ (?!__proto__)(get|value)\b/.test(safe)) {
    throw new Error(`build-parts: ${file}: an esbuild helper's descriptor still inherits from Object.prototype; give it \`__proto__: null\` again`)
  }
  if (safe !== text) writeFileSync(file, safe)
}

/**
 * Builds dist/cjs/index.js and dist/cjs/parts/ into `outDir` (a scratch dist/cjs). `common` is
 * build-ts.mjs's esbuild options; `scratch` a folder for the steps in between.
 */
export async function buildMain({ esbuild, root, outDir, scratch, common }) {
  const lib = join(root, 'lib')
  const exports = indexExports(root, lib)
  const accessors = lazyAccessors(lib)
  const eagerFiles = new Set(EAGER.map((m) => join(lib, `${m}.ts`)))
  const lazyExports = exports.filter((e) => !eagerFiles.has(e.file))
  // One part per module: index.ts's lazy modules, and the accessors' targets.
  const partOf = new Map()
  // A folder's main module (policies/supervisor/supervisor.ts, mcp/index.ts) is named by its folder.
  const name = (file) => relative(lib, file).replace(/\.ts$/, '').replace(/(^|\/)([^/]+)\/(\2|index)$/, '$1$2').replaceAll('/', '-')
  for (const e of lazyExports) partOf.set(e.file, name(e.file))
  for (const a of accessors) if (!partOf.has(a.target)) partOf.set(a.target, a.name)

  // The public API as it was before it came in parts: one bundle of index.ts, loaded here once. Its
  // names are the ones index.js must end with, and it says which exports are classes.
  const referenceFile = join(scratch, 'reference', 'index.js')
  await esbuild.build({ ...common, sourcemap: false, entryPoints: [join(lib, 'index.ts')], outfile: referenceFile })
  const reference = createRequire(referenceFile)(referenceFile)
  // The build's id: the library in one piece, hashed (the same sources give the same id).
  const buildId = createHash('sha256').update(readFileSync(referenceFile)).digest('hex').slice(0, 16)

  const eagerBuild = async (handOver, write) =>
    esbuild.build({
      ...common,
      stdin: { contents: eagerEntry(root, exports, eagerFiles, partOf, reference, handOver, buildId), resolveDir: lib, sourcefile: 'index-eager.js', loader: 'js' },
      outfile: join(outDir, 'index.js'),
      plugins: [accessorPlugin(accessors, partOf, join(lib, 'ground', 'load-part.ts'))],
      metafile: true,
      write,
    })
  // 1. What the eager bundle holds.
  const first = await eagerBuild(new Map(), false)
  const eager = new Set(Object.keys(first.metafile.inputs).filter((f) => f.startsWith('lib/')))
  for (const [file, part] of partOf) {
    if (eager.has(relative(root, file))) throw new Error(`build-parts: ${relative(root, file)} (part ${part}) is in the eager bundle: add it to EAGER or cut the import that pulls it in`)
  }
  // 2. The parts, split, as ESM (esbuild splits only ESM), then each file made CommonJS.
  const used = new Set()
  const esmDir = join(scratch, 'parts-esm')
  await esbuild.build({
    ...common,
    format: 'esm',
    splitting: true,
    entryPoints: Object.fromEntries([...partOf].map(([file, part]) => [part, file])),
    outdir: esmDir,
    chunkNames: 'chunk-[hash]',
    plugins: [fromEagerPlugin(root, eager, used, buildId)],
  })
  const partsDir = join(outDir, 'parts')
  mkdirSync(partsDir, { recursive: true })
  for (const f of readdirSync(esmDir).filter((f) => f.endsWith('.js'))) {
    await esbuild.build({ ...common, bundle: false, entryPoints: [join(esmDir, f)], outfile: join(partsDir, f), external: undefined })
    safeHelpers(join(partsDir, f))
  }
  await esbuild.build({ ...common, entryPoints: [createRequire(join(root, 'package.json')).resolve('node-gyp-build')], outfile: join(partsDir, 'node-gyp-build.js') })
  // 3. The eager bundle, handing over the modules the parts take from it (their exports by name).
  const handOver = new Map()
  for (const rel of used) {
    const one = await esbuild.build({ entryPoints: [join(root, rel)], bundle: false, format: 'esm', write: false, metafile: true, outdir: scratch, logLevel: 'silent' })
    handOver.set(rel, Object.values(one.metafile.outputs).flatMap((o) => o.exports ?? []).sort())
  }
  await eagerBuild(handOver, true)
  safeHelpers(join(outDir, 'index.js'))
  flatExports(join(outDir, 'index.js'))
  rmSync(join(scratch, 'parts-esm'), { recursive: true, force: true })

  // The same names, and the same kind of value under each, as the bundle in one piece.
  const built = createRequire(join(outDir, 'index.js'))(join(outDir, 'index.js'))
  const names = (m) => Object.keys(m).filter((n) => n !== '__esModule').sort()
  if (names(built).join() !== names(reference).join()) {
    throw new Error(`build-parts: index.js exports ${names(built).join(', ')}; lib/index.ts exports ${names(reference).join(', ')}`)
  }
  for (const n of names(reference)) {
    const [a, b] = [built[n], reference[n]]
    if (typeof a !== typeof b || (typeof b === 'function' && (a.name !== b.name || a.length !== b.length || types.isAsyncFunction(a) !== types.isAsyncFunction(b) || typeof a[promisify.custom] !== typeof b[promisify.custom]))) {
      throw new Error(`build-parts: ${n} differs from lib/index.ts's: ${typeof a} ${a?.name}/${a?.length} against ${typeof b} ${b?.name}/${b?.length}`)
    }
  }
  return { eager: [...eager].sort(), used: [...used].sort(), parts: [...new Set(partOf.values())].sort(), dirname: dirname(referenceFile) }
}
