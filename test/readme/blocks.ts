// The fenced code blocks of the docs (README.md and every docs/*.md page), as the doc test
// (test/readme.test.ts) sees them. A block's language says what the test does with it; a
// `<!-- doctest: skip (reason) -->` comment on the line before a block says why it is not run.
// Nothing is filtered silently: a block the test cannot classify fails the test.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

export interface Block {
  /** The page, relative to the repository: README.md, docs/cli.md... */
  file: string
  /** 1-based line of the opening fence in that page. */
  line: number
  lang: string
  code: string
  /** The reason given by a `<!-- doctest: skip (reason) -->` marker, or null. */
  skip: string | null
  /** The nearest heading above it, for the test's name. */
  heading: string
}

/**
 * What each language means here:
 * - js: run under Node (ESM if it imports, CommonJS if it requires) and type-checked (checkJs, strict);
 *   one that imports from 'vitest' is a setup file, run by `vitest run` around a test file;
 * - ts: type-checked (strict);
 * - sh: run with bash;
 * - json: a host configuration (`mcpServers`, or VS Code's `servers`): each server's command runs as
 *   a host starts it, its stdin a pipe that ends at once; one that cannot run here is marked;
 * - text: output shown to the reader (a transcript, a report line): never run.
 * Any other language, and an untagged block, needs a skip marker.
 */
export const RUNNABLE = new Set(['js', 'ts', 'sh'])
export const OUTPUT = 'text'

const FENCE = /^(\s*)```(\S*)\s*$/
const MARKER = /^\s*<!--\s*doctest:\s*(.*?)\s*-->\s*$/
const SKIP = /^skip \((.+)\)$/

/** The pages of the docs, relative to `root`: README.md, then docs/*.md in name order. */
export function docPages(root: string): string[] {
  const docs = readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort()
  return ['README.md', ...docs.map((f) => `docs/${f}`)]
}

/** Every block of every page of the docs. */
export function docBlocks(root: string): Block[] {
  return docPages(root).flatMap((file) => readmeBlocks(readFileSync(join(root, file), 'utf8'), file))
}

export function readmeBlocks(markdown: string, file = 'README.md'): Block[] {
  const lines = markdown.split('\n')
  const blocks: Block[] = []
  let heading = ''
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    if (/^#{1,6} /.test(line)) heading = line.replace(/^#+ /, '')
    const open = FENCE.exec(line)
    if (!open) continue
    const indent = open[1]!.length
    const body: string[] = []
    let j = i + 1
    while (j < lines.length && !/^\s*```\s*$/.test(lines[j]!)) body.push(lines[j++]!.slice(indent))
    if (j === lines.length) throw new Error(`${file}:${i + 1}: a code block that never closes`)
    let k = i - 1
    while (k >= 0 && lines[k]!.trim() === '') k--
    const marker = k >= 0 ? MARKER.exec(lines[k]!) : null
    let skip: string | null = null
    if (marker) {
      const m = SKIP.exec(marker[1]!)
      if (!m) throw new Error(`${file}:${k + 1}: unknown doctest marker "${marker[1]}" (only "skip (reason)" exists)`)
      skip = m[1]!
    }
    blocks.push({ file, line: i + 1, lang: open[2]!, code: body.join('\n') + '\n', skip, heading })
    i = j
  }
  return blocks
}

/** ESM when it has an import or export statement; CommonJS otherwise (where top-level await is an error, as for users). */
export const isEsm = (code: string): boolean => /^\s*(import|export)\s/m.test(code)

/** A host configuration's servers (`mcpServers`, or VS Code's `servers`), or null for other JSON. */
export function hostServers(code: string): Array<{ name: string; command: string; args: string[] }> | null {
  const config = JSON.parse(code) as Record<string, unknown>
  const servers = (config.mcpServers ?? config.servers) as Record<string, { command?: unknown; args?: unknown; type?: unknown }> | undefined
  if (!servers || typeof servers !== 'object') return null
  const entries = Object.entries(servers)
  const valid = (s: { command?: unknown; args?: unknown; type?: unknown }): boolean =>
    typeof s.command === 'string' &&
    (s.type === undefined || s.type === 'stdio') &&
    (s.args === undefined || (Array.isArray(s.args) && s.args.every((a) => typeof a === 'string')))
  if (entries.length === 0 || !entries.every(([, s]) => s && valid(s))) return null
  return entries.map(([name, s]) => ({ name, command: s.command as string, args: (s.args as string[] | undefined) ?? [] }))
}

export const isVitestSetup = (code: string): boolean => /\bfrom ['"]vitest['"]/.test(code)

/** The code without its `//` comments (a `//` that follows a colon, as in a URL, is kept). */
export const withoutComments = (code: string): string => code.replace(/(^|[^:\w'"`])\/\/.*$/gm, '$1')
