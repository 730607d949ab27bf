/**
 * Recognizing a container run in an argv, and the two labels reapkit adds to it (issue 18's
 * contract, shared with the C wrapper and doctor).
 *
 * `docker run -i --rm IMAGE` is a client: the container belongs to the engine's daemon, not to our
 * process tree. So a command whose program is docker, podman or nerdctl running `run` (or
 * `container run`) gets two labels at the end of its run flags, right before the image (or the `--`
 * before it): `reapkit.run=<id>` (the run's identity: the container is found by it, without a race
 * and without a cidfile) and `reapkit.owner=<owner>` (who stops it: owner.ts). Last, because both
 * engines keep the last value of a label given twice (`--label-file`'s come before every
 * `--label`): a user's own `reapkit.run` label cannot hide the container from its stop. Nothing
 * else about the run changes.
 *
 * Parsing follows the clients' own flag parser (pflag): a value flag takes the next argument
 * unless written `--flag=value` or `-f=value`; short flags may be clustered (`-it`, `-dit`,
 * `-eFOO=1`); parsing of the run's flags stops at the first positional argument (the image) or
 * `--`. Whatever reapkit does not know for certain is left alone: an unknown flag (global or run),
 * `-d` (the user asked the container to outlive its client), a `run` without an image, `--help`.
 * Such a command is run as a plain command, exactly as before.
 *
 * The C wrapper must read an argv exactly so, or the same command's container is stopped by one
 * and left Up by the other: the tables are grammar.ts's, which native/supervise/run_grammar.c reads
 * too (generated into a header), and test/container-grammar.test.ts feeds both the same argvs.
 */
import { engineOf } from './engine-name'
import { BOOL_FALSE, BOOL_TRUE, type ContainerEngine, ENGINES, GLOBAL_FLAGS, type FlagLists, RUN_AUTO_REMOVE, RUN_FLAGS, RUN_LABEL_FLAGS, RUN_NOT_OURS } from './grammar'

export type { ContainerEngine } from './grammar'
export { engineOf } from './engine-name'

/** What a recognized `run` command says about its container. */
export interface ContainerRun {
  engine: ContainerEngine
  /** The client program, as given (argv[0]): the engine is spoken to through the same one. */
  bin: string
  /** The global flags before the subcommand, verbatim: every engine call repeats them. */
  globals: string[]
  /** Index in `args` (argv without argv[0]) of the `run` token. */
  runAt: number
  /** Index in `args` where the run's flags end: the image, or the `--` before it. Our labels go there. */
  flagsEnd: number
  /** The values of the run's `-l`/`--label` flags, in order (the engine keeps the last of a key). */
  labels: string[]
  /** `--rm` was given: the engine removes the container once it exits. */
  autoRemove: boolean
}

/** The label that identifies one run (its value: a fresh random id). */
export const RUN_LABEL = 'reapkit.run'
/** The label that names the run's owner (its value: owner.ts's `host/boot_id/pid/starttime`). */
export const OWNER_LABEL = 'reapkit.owner'

interface FlagTable {
  /** Flags that take a value (next argument, or after `=`; a short one also the rest of its cluster). */
  values: ReadonlySet<string>
  /** Flags that take none (`--flag=true|false` allowed). */
  booleans: ReadonlySet<string>
}

const table = (lists: FlagLists): FlagTable => ({ values: new Set(lists.values), booleans: new Set(lists.booleans) })

/** The grammar's tables (grammar.ts: the C wrapper reads the same ones), as sets. */
const GLOBALS = Object.fromEntries(ENGINES.map((engine) => [engine, table(GLOBAL_FLAGS[engine])])) as Record<ContainerEngine, FlagTable>
const RUN = table(RUN_FLAGS)
const NOT_OURS: ReadonlySet<string> = new Set(RUN_NOT_OURS)
const LABELS: ReadonlySet<string> = new Set(RUN_LABEL_FLAGS)

/** One flag as pflag reads it: its name(s), whether it was given a value inline, and where parsing resumes. */
interface Flag {
  /** `--name` for a long flag; each `-x` of a short cluster, in order. */
  names: string[]
  /** The value each name received: for booleans 'true'/'false' (or the inline value), for value flags the value. */
  values: string[]
  /** Index of the next unread argument. */
  next: number
}

/**
 * Reads the flag at `args[i]` against `flags`; null when a name is unknown or a value is missing
 * (the command is then not one we can read for certain).
 */
function readFlag(args: readonly string[], i: number, flags: FlagTable): Flag | null {
  const arg = args[i]!
  if (arg.startsWith('--')) {
    const eq = arg.indexOf('=')
    const name = eq < 0 ? arg : arg.slice(0, eq)
    if (flags.booleans.has(name)) return { names: [name], values: [eq < 0 ? 'true' : arg.slice(eq + 1)], next: i + 1 }
    if (!flags.values.has(name)) return null
    if (eq >= 0) return { names: [name], values: [arg.slice(eq + 1)], next: i + 1 }
    return i + 1 < args.length ? { names: [name], values: [args[i + 1]!], next: i + 2 } : null
  }
  // A short cluster: booleans, then at most one value flag, which takes the rest (or the next
  // argument). As pflag: `-f=V` gives V (a boolean too) when something follows the `=`; `-f=` gives
  // a value flag "=" and leaves a boolean's `=` a flag of its own (unknown).
  const out: Flag = { names: [], values: [], next: i + 1 }
  for (let k = 1; k < arg.length; k++) {
    const name = `-${arg[k]}`
    if (flags.booleans.has(name)) {
      if (arg[k + 1] === '=' && k + 2 < arg.length) return { names: [...out.names, name], values: [...out.values, arg.slice(k + 2)], next: i + 1 }
      out.names.push(name)
      out.values.push('true')
      continue
    }
    if (!flags.values.has(name)) return null
    let rest = arg.slice(k + 1)
    if (rest.length > 1 && rest.startsWith('=')) rest = rest.slice(1)
    if (rest !== '') return { names: [...out.names, name], values: [...out.values, rest], next: i + 1 }
    if (i + 1 >= args.length) return null
    return { names: [...out.names, name], values: [...out.values, args[i + 1]!], next: i + 2 }
  }
  return out
}

/** pflag's reading of a boolean's inline value (Go's strconv.ParseBool: grammar.ts); null if none of them. */
function boolValue(value: string): boolean | null {
  if (BOOL_TRUE.includes(value)) return true
  if (BOOL_FALSE.includes(value)) return false
  return null
}

const isFlag = (arg: string): boolean => arg.length > 1 && arg.startsWith('-')

/** Index of the `run` token after the globals starting at args[0], and the globals; null if not a run. */
function findRun(args: readonly string[], globals: FlagTable): { runAt: number; globals: string[] } | null {
  let i = 0
  while (i < args.length && isFlag(args[i]!) && args[i] !== '--') {
    const flag = readFlag(args, i, globals)
    if (flag === null) return null // an unknown global flag: never guess
    i = flag.next
  }
  if (args[i] === 'run') return { runAt: i, globals: args.slice(0, i) }
  if (args[i] === 'container' && args[i + 1] === 'run') return { runAt: i + 1, globals: args.slice(0, i) }
  return null
}

/**
 * The global flags of a run (ContainerRun.globals), read by the client's own grammar: each flag's
 * long or short name and its value ('true'/'false' for a boolean), in order; null when one cannot
 * be read (parseContainerRun never returns such globals).
 */
export function globalFlags(engine: ContainerEngine, globals: readonly string[]): { name: string; value: string }[] | null {
  const out: { name: string; value: string }[] = []
  for (let i = 0; i < globals.length; ) {
    const flag = readFlag(globals, i, GLOBALS[engine])
    if (flag === null) return null
    flag.names.forEach((name, k) => out.push({ name, value: flag.values[k]! }))
    i = flag.next
  }
  return out
}

/**
 * The run flags of a parsed run (`args[run.runAt + 1]` up to `run.flagsEnd`), each name with its
 * value as given (`true` for a bare boolean; a cluster such as `-it` gives one entry per flag), read
 * by the same parser; null where one cannot be read (parseContainerRun already refused those).
 */
export function runFlags(args: readonly string[], run: Pick<ContainerRun, 'runAt' | 'flagsEnd'>): { name: string; value: string }[] | null {
  const out: { name: string; value: string }[] = []
  for (let i = run.runAt + 1; i < run.flagsEnd; ) {
    const flag = readFlag(args, i, RUN)
    if (flag === null) return null
    flag.names.forEach((name, k) => out.push({ name, value: flag.values[k]! }))
    i = flag.next
  }
  return out
}

interface RunFlags {
  autoRemove: boolean
  flagsEnd: number
  labels: string[]
}

/**
 * What the run flags from args[from] say: `--rm` given (and true), where they end, their labels;
 * null when the run is not ours to handle.
 */
function readRunFlags(args: readonly string[], from: number): RunFlags | null {
  let autoRemove = false
  const labels: string[] = []
  let i = from
  let flagsEnd = -1
  while (i < args.length && isFlag(args[i]!)) {
    if (args[i] === '--') {
      flagsEnd = i++
      break
    }
    const flag = readFlag(args, i, RUN)
    if (flag === null) return null
    for (let k = 0; k < flag.names.length; k++) {
      const name = flag.names[k]!
      if (LABELS.has(name)) labels.push(flag.values[k]!)
      if (!RUN.booleans.has(name)) continue
      const on = boolValue(flag.values[k]!)
      if (on === null) return null // `--rm=maybe`: the client refuses it; not ours to read
      if (on && NOT_OURS.has(name)) return null
      if (name === RUN_AUTO_REMOVE) autoRemove = on
    }
    i = flag.next
  }
  if (i >= args.length) return null // no image: the client fails on its own
  return { autoRemove, flagsEnd: flagsEnd < 0 ? i : flagsEnd, labels }
}

/**
 * The container run that `command args` is, or null for anything else (then it is a plain command).
 * Pure: reads nothing but its arguments.
 */
export function parseContainerRun(command: string, args: readonly string[]): ContainerRun | null {
  const engine = engineOf(command)
  if (engine === null) return null
  const found = findRun(args, GLOBALS[engine])
  if (found === null) return null
  const flags = readRunFlags(args, found.runAt + 1)
  if (flags === null) return null
  return { engine, bin: command, globals: found.globals, runAt: found.runAt, autoRemove: flags.autoRemove, flagsEnd: flags.flagsEnd, labels: flags.labels }
}

/**
 * `args` with reapkit's two labels inserted at the end of the run flags, right before the image or
 * the `--` before it (a new array): the engine keeps the last value of a label, so ours win.
 */
export function labelledRunArgs(args: readonly string[], run: Pick<ContainerRun, 'flagsEnd'>, labels: { runId: string; owner: string }): string[] {
  const at = run.flagsEnd
  return [...args.slice(0, at), '--label', `${RUN_LABEL}=${labels.runId}`, '--label', `${OWNER_LABEL}=${labels.owner}`, ...args.slice(at)]
}

/**
 * Engine flags whose value may be a secret (long spellings): `--env KEY=value` and podman's
 * `--env-merge KEY=value` (the value), `--build-arg KEY=value` (the value), podman's `--creds
 * user:password`, `--decryption-key key:passphrase` and `login --password` (all of it).
 */
const SECRET_LONG: ReadonlySet<string> = new Set(['--env', '--env-merge', '--build-arg', '--creds', '--decryption-key', '--password'])
/** Of those, the ones whose whole value is secret (no `KEY=` to keep). */
const SECRET_WHOLE: ReadonlySet<string> = new Set(['--creds', '--decryption-key', '--password'])
/** Short flags that take a value, other than `-e`: in a cluster, the rest is their value, not flags. */
const SHORT_VALUE = 'achlmpuvw'

/** The text written in place of a secret value. */
export const REDACTED = '<redacted>'

const hidden = (name: string, value: string): string => {
  const eq = value.indexOf('=')
  if (SECRET_WHOLE.has(name)) return REDACTED
  return eq < 0 ? value : `${value.slice(0, eq)}=${REDACTED}` // `-e KEY` names a variable: no value in it
}

/**
 * The secret flag `arg` is, if any: its name and its inline value (`--env=K=V`, `-eK=V`, `-ite=K=V`;
 * null when the value is the next argument). Read as pflag reads a short cluster (letters until
 * `-e`, or until another value flag, whose value the rest is), but any other letter is read as a
 * flag: a spelling an engine may refuse is still hidden.
 */
function secretFlag(arg: string): { name: string; inline: string | null } | null {
  if (arg.startsWith('--')) {
    const eq = arg.indexOf('=')
    const name = eq < 0 ? arg : arg.slice(0, eq)
    return SECRET_LONG.has(name) ? { name, inline: eq < 0 ? null : arg.slice(eq + 1) } : null
  }
  if (!arg.startsWith('-')) return null
  for (let k = 1; k < arg.length; k++) {
    const c = arg[k]!
    if (c === 'e') {
      if (arg[k + 1] === '=') return { name: '-e', inline: arg.slice(k + 2) }
      return { name: '-e', inline: k + 1 < arg.length ? arg.slice(k + 1) : null }
    }
    if (SHORT_VALUE.includes(c) || !/[a-zA-Z]/.test(c)) return null
  }
  return null
}

/**
 * `args` (argv without argv[0]) as it may be written down (a state file, a log): for any command
 * whose program is an engine (engineOf(): docker, podman, nerdctl), whatever its subcommand (`run`
 * with flags reapkit does not know, `-d`, `container create`, `exec`...), the values of every
 * secret flag (SECRET_LONG, and `-e` in every spelling: `-eK=V`, `-ite K=V`, `-e=K=V`) replaced by
 * REDACTED, anywhere in the argv: an unknown flag may hide where the engine's own flags end, so the
 * container's own command is redacted too (a value hidden there costs nothing). Anything else, and
 * any other program's args, unchanged (a new array, of the same length).
 */
export function redactRunArgs(command: string, args: readonly string[]): string[] {
  const out = [...args]
  if (engineOf(command) === null) return out
  for (let i = 0; i < args.length; i++) {
    const flag = secretFlag(args[i]!)
    if (flag === null) continue
    if (flag.inline !== null) out[i] = args[i]!.slice(0, args[i]!.length - flag.inline.length) + hidden(flag.name, flag.inline)
    else if (i + 1 < args.length) out[i + 1] = hidden(flag.name, args[i + 1]!) // not skipped: `-e -e K=V` hides K=V too
  }
  return out
}
