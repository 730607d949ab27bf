// The C wrapper's copy of the container clients' grammar (native/supervise/run_grammar_table.h),
// rendered from lib/mechanisms/container/grammar.ts: the one table both readers of a `docker run`
// use. generate.mjs writes it (or checks it); test/container-grammar.test.ts compares the committed
// header with this rendering, so a table changed on one side alone fails the suite.
import { BOOL_FALSE, BOOL_TRUE, ENGINES, type FlagLists, GLOBAL_FLAGS, RUN_AUTO_REMOVE, RUN_FLAGS, RUN_NOT_OURS } from '../../lib/mechanisms/container/grammar'

/** Where the header lives, from the repository's root. */
export const HEADER_PATH = 'native/supervise/run_grammar_table.h'

const WIDTH = 110

/** A C string literal for a flag name or a word of the table (plain ASCII only: anything else is a table error). */
function literal(word: string): string {
  if (!/^[-A-Za-z0-9]+$/.test(word)) throw new RangeError(`container grammar: ${JSON.stringify(word)} is not a flag name or word`)
  return `"${word}"`
}

/** `static const char *const name[] = {"a", "b", NULL};`, wrapped at WIDTH columns. */
function wordArray(name: string, words: readonly string[]): string {
  const items = [...words.map(literal), 'NULL']
  const lines: string[] = []
  let line = `static const char *const ${name}[] = {`
  for (const [k, item] of items.entries()) {
    const piece = item + (k < items.length - 1 ? ',' : '};')
    if (line.length + 1 + piece.length > WIDTH) {
      lines.push(line)
      line = `    ${piece}`
    } else {
      line += line.endsWith('{') ? piece : ` ${piece}`
    }
  }
  lines.push(line)
  return lines.join('\n')
}

const tableArrays = (prefix: string, flags: FlagLists): string =>
  `${wordArray(`${prefix}_values`, flags.values)}\n${wordArray(`${prefix}_booleans`, flags.booleans)}`

/** The header's full text. */
export function grammarHeader(): string {
  return `/* GENERATED from lib/mechanisms/container/grammar.ts by scripts/container-grammar/generate.mjs: do
 * not edit. Change the table there and run \`node scripts/container-grammar/generate.mjs\`;
 * test/container-grammar.test.ts fails while this file differs from what the table generates.
 *
 * The container clients' grammar for the C wrapper (run_grammar.c includes it, and nothing else):
 * the global flags of each client and the run flags, those that take a value and those that take
 * none; the run booleans that make a run not ours; the inline values of a boolean. */
#ifndef REAPKIT_RUN_GRAMMAR_TABLE_H
#define REAPKIT_RUN_GRAMMAR_TABLE_H

#include <stddef.h>

typedef struct {
  const char *const *values;   /* take a value: the next argument, after '=', or the rest of a short cluster */
  const char *const *booleans; /* take none ('--flag=false' and '-f=false' allowed) */
} flag_table_t;

#define ENGINE_COUNT ${ENGINES.length}
${wordArray('engine_names', ENGINES)}

${ENGINES.map((engine) => tableArrays(`${engine}_global`, GLOBAL_FLAGS[engine])).join('\n')}
/* Per engine, in engine_names' order. */
static const flag_table_t global_flags[ENGINE_COUNT] = {
${ENGINES.map((engine) => `    {${engine}_global_values, ${engine}_global_booleans},`).join('\n')}
};

${tableArrays('run', RUN_FLAGS)}
static const flag_table_t run_flags = {run_values, run_booleans};

${wordArray('run_not_ours', RUN_NOT_OURS)}
static const char run_auto_remove[] = ${literal(RUN_AUTO_REMOVE)};
${wordArray('bool_true', BOOL_TRUE)}
${wordArray('bool_false', BOOL_FALSE)}

#endif
`
}
