// A fake engine client: a `docker` or `podman` shell script first on a test's PATH, the input under
// test. It answers, delays, fails or hangs the subcommands a small spec names, and passes every
// other call to the real client in front of the real engine (or, with no engine behind it, fails
// them loudly). The way to provoke a slow, failing or hung engine call every time; the engine, the
// library and every process stay real.
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { clientPath, type EngineName, type TestEngine } from './containers'

/** What one subcommand does. */
export type FakeCall =
  /** Never answers: `exec sleep N` (until its caller's bound kills it). */
  | { hangSeconds: number }
  /** Answers N seconds late: sleeps, then goes on as any other call. */
  | { delaySeconds: number }
  /** Fails: the message on stderr, exit 125 (an engine's own error). */
  | { fail: string }
  /** Answers this line on stdout, exit 0. */
  | { print: string }
  /** These sh lines (`$real` is the real client, `$@` the call's arguments); the call goes on to the real client unless they exit. */
  | { sh: string }

export interface FakeEngineSpec {
  bin: EngineName
  /** By subcommand (`$1`): what the call does. */
  calls?: Record<string, FakeCall>
  /** From the first call of `command` on (that call too), every call but those in `except` hangs `seconds`, until release(). */
  hangFrom?: { command: string; except: string[]; seconds: number }
  /** The real client a call goes on to (found on this engine's PATH); without it, such a call is `fake <bin>: unexpected ...`, exit 1. */
  passTo?: TestEngine
  /** Each call appends its pid to the pids file first: a test checks none outlives it. */
  recordPids?: boolean
}

export interface FakeEngine {
  /** The folder that holds the script (and its files). */
  dir: string
  /** passTo's environment (this process's without one), with `dir` first on PATH. */
  env: NodeJS.ProcessEnv
  /** The pids of the calls so far (recordPids). */
  pids(): number[]
  /** Whether hangFrom's command has been called. */
  hung(): boolean
  /** Lets the calls after hangFrom's command answer again. */
  release(): void
  /** Removes the folder. */
  dispose(): void
}

const sq = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`

function callLine(call: FakeCall): string {
  if ('hangSeconds' in call) return `exec sleep ${call.hangSeconds}`
  if ('delaySeconds' in call) return `sleep ${call.delaySeconds}`
  if ('fail' in call) return `echo ${sq(call.fail)} >&2; exit 125`
  if ('sh' in call) return call.sh
  return `echo ${sq(call.print)}; exit 0`
}

/** The script's text; `dir` holds its files (pids, the hang marker). */
export function fakeEngineScript(spec: FakeEngineSpec, dir: string): string {
  const lines = ['#!/bin/sh']
  if (spec.passTo) lines.push(`real=${sq(clientPath(spec.passTo))}`)
  if (spec.recordPids) lines.push(`echo $$ >> ${sq(join(dir, 'pids'))}`)
  if (spec.hangFrom) {
    const { command, except, seconds } = spec.hangFrom
    const marker = sq(join(dir, 'hung'))
    lines.push(`[ "$1" = ${sq(command)} ] && : > ${marker}`)
    const spared = except.length > 0 ? `${except.map(sq).join('|')}) ;; ` : ''
    lines.push(`if [ -e ${marker} ]; then case "$1" in ${spared}*) exec sleep ${seconds} ;; esac; fi`)
  }
  const calls = Object.entries(spec.calls ?? {})
  if (calls.length > 0) lines.push('case "$1" in', ...calls.map(([name, call]) => `  ${sq(name)}) ${callLine(call)} ;;`), 'esac')
  lines.push(spec.passTo ? 'exec "$real" "$@"' : `echo "fake ${spec.bin}: unexpected $*" >&2; exit 1`)
  return `${lines.join('\n')}\n`
}

/** Writes the fake client into `dir` (made by the caller, who puts it on PATH). */
export function writeFakeEngine(dir: string, spec: FakeEngineSpec): FakeEngine {
  const file = join(dir, spec.bin)
  writeFileSync(file, fakeEngineScript(spec, dir))
  chmodSync(file, 0o755)
  const base = spec.passTo?.env ?? process.env
  const pidsFile = join(dir, 'pids')
  const marker = join(dir, 'hung')
  return {
    dir,
    env: { ...base, PATH: `${dir}${delimiter}${base.PATH ?? ''}` },
    pids: () => (existsSync(pidsFile) ? readFileSync(pidsFile, 'utf8').split('\n').filter(Boolean).map(Number) : []),
    hung: () => existsSync(marker),
    release: () => rmSync(marker, { force: true }),
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  }
}

/** The fake client in a fresh folder of its own; dispose() removes it. */
export function fakeEngine(spec: FakeEngineSpec): FakeEngine {
  return writeFakeEngine(mkdtempSync(join(tmpdir(), `reapkit-fake-${spec.bin}-`)), spec)
}
