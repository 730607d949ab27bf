// The README's fenced code blocks, as the doc test (test/readme.test.ts) sees them. A block's
// language says what the test does with it; a `<!-- doctest: skip (reason) -->` comment on the
// line before a block says why it is not run. Nothing is filtered silently: a block the test
// cannot classify fails the test.

export interface Block {
  /** 1-based line of the opening fence in README.md. */
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
 * - json: parsed; host configurations are skipped (marked) as runs;
 * - text: output shown to the reader (a transcript, a report line): never run.
 * Any other language, and an untagged block, needs a skip marker.
 */
export const RUNNABLE = new Set(['js', 'ts', 'sh'])
export const OUTPUT = 'text'

const FENCE = /^(\s*)```(\S*)\s*$/
const MARKER = /^\s*<!--\s*doctest:\s*(.*?)\s*-->\s*$/
const SKIP = /^skip \((.+)\)$/

export function readmeBlocks(markdown: string): Block[] {
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
    if (j === lines.length) throw new Error(`README.md:${i + 1}: a code block that never closes`)
    let k = i - 1
    while (k >= 0 && lines[k]!.trim() === '') k--
    const marker = k >= 0 ? MARKER.exec(lines[k]!) : null
    let skip: string | null = null
    if (marker) {
      const m = SKIP.exec(marker[1]!)
      if (!m) throw new Error(`README.md:${k + 1}: unknown doctest marker "${marker[1]}" (only "skip (reason)" exists)`)
      skip = m[1]!
    }
    blocks.push({ line: i + 1, lang: open[2]!, code: body.join('\n') + '\n', skip, heading })
    i = j
  }
  return blocks
}

/** ESM when it has an import or export statement; CommonJS otherwise (where top-level await is an error, as for users). */
export const isEsm = (code: string): boolean => /^\s*(import|export)\s/m.test(code)

export const isVitestSetup = (code: string): boolean => /\bfrom ['"]vitest['"]/.test(code)

/** The code without its `//` comments (a `//` that follows a colon, as in a URL, is kept). */
export const withoutComments = (code: string): string => code.replace(/(^|[^:\w'"`])\/\/.*$/gm, '$1')
