/**
 * Speaking to a container engine: the same client binary as the run's argv[0], the same global
 * flags verbatim, the same environment (DOCKER_HOST, DOCKER_CONTEXT, CONTAINER_HOST...) and working
 * directory, so that the call reaches the daemon (or podman's store) the run reached.
 *
 * Every call is bounded: at its bound the client is SIGKILLed and the call rejects with a
 * TimeoutError (code ETIMEDOUT). A client that exits non-zero (daemon down, no such context...)
 * rejects with an EngineError (code ERR_REAPKIT_ENGINE) carrying its stderr. Either way the engine
 * did not answer: a stop reads that as "uncertain", never as "gone". Asynchronous throughout: a stop
 * path never blocks the event loop on an engine.
 */
import type { ExecFileException } from 'node:child_process'
import { TimeoutError } from '../../ground/errors'
import { type ContainerEngine, RUN_LABEL } from './command'
import { EngineError } from './engine-error'
import { commandAs, type EngineUser } from './engine-user'

export { EngineError } from './engine-error'

/** How to reach the engine a run used. */
export interface EngineClient {
  engine: ContainerEngine
  /** The client program, as the run named it. */
  bin: string
  /** The run's global flags, verbatim. */
  globals: readonly string[]
  /** The environment the run's client got. */
  env: NodeJS.ProcessEnv
  /** The run's working directory, absolute (spawn() records it at spawn time: a later process.chdir() changes nothing). */
  cwd?: string
  /** Run every call as this user (doctor, for another user's client: ./engine-user.ts); absent: as ourselves. */
  user?: EngineUser
}

/** Default bound of one engine call that does not wait on a container (list, inspect, kill, rm). */
export const ENGINE_CALL_MS_DEFAULT = 10_000

/**
 * Runs `<bin> <globals> <args>`; resolves to its stdout, rejects with EngineError or TimeoutError
 * (or Node's AbortError when `signal` fires: the client is then SIGKILLed, the engine's own work
 * goes on).
 */
export function engineCall(client: EngineClient, args: readonly string[], timeoutMs: number = ENGINE_CALL_MS_DEFAULT, signal?: AbortSignal): Promise<string> {
  // Loaded on first use, as spawn.ts does: a program that never meets a container never pays for it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { execFile } = require('node:child_process') as typeof import('node:child_process')
  const argv = [...client.globals, ...args]
  const what = `${client.bin} ${args[0] ?? ''}`.trim()
  const bound = Math.max(1, Math.ceil(timeoutMs))
  const command = client.user ? commandAs(client.user, client.bin, argv) : { file: client.bin, args: argv }
  return new Promise((resolve, reject) => {
    execFile(
      command.file,
      command.args,
      { env: client.env, ...(client.cwd ? { cwd: client.cwd } : {}), ...(signal ? { signal } : {}), timeout: bound, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024, windowsHide: true },
      (err: ExecFileException | null, stdout: string, stderr: string) => {
        if (!err) return resolve(stdout)
        if (err.name === 'AbortError') return reject(err)
        if (err.killed && err.signal === 'SIGKILL') return reject(new TimeoutError(`${what} did not answer within ${bound} ms`, bound))
        const code = typeof err.code === 'number' ? err.code : null
        const detail = stderr.trim() || err.message
        reject(new EngineError(`${what} failed${code !== null ? ` (exit ${code})` : ''}: ${detail}`, stderr, code, err))
      },
    )
  })
}

const lines = (out: string): string[] => out.split('\n').map((l) => l.trim()).filter(Boolean)

/** The bound of one engine call, and the signal that cuts it short (its client SIGKILLed). */
export interface CallOptions {
  timeoutMs?: number
  signal?: AbortSignal
}

/** Ids (full) of the containers carrying `label` (`key` or `key=value`); `all`: stopped ones too. */
export async function listByLabel(client: EngineClient, label: string, options: { all?: boolean } & CallOptions = {}): Promise<string[]> {
  const args = ['ps', ...(options.all === false ? [] : ['-a']), '-q', '--no-trunc', '--filter', `label=${label}`]
  return lines(await engineCall(client, args, options.timeoutMs, options.signal))
}

/** Ids of one run's containers (by its `reapkit.run` label); `all: false`: running ones only. */
export function listRun(client: EngineClient, runId: string, options: { all?: boolean } & CallOptions = {}): Promise<string[]> {
  return listByLabel(client, `${RUN_LABEL}=${runId}`, options)
}

/** "No such container/object": the engine's way of saying it is gone. */
export function isNoSuchContainer(err: unknown): boolean {
  return err instanceof EngineError && /no such (container|object)/i.test(err.stderr)
}

/** The container's state ('running', 'exited', 'created', ...), or 'gone' when the engine has no such container. */
export async function containerStatus(client: EngineClient, id: string, timeoutMs?: number, signal?: AbortSignal): Promise<string> {
  try {
    return (await engineCall(client, ['inspect', '--format', '{{.State.Status}}', id], timeoutMs, signal)).trim()
  } catch (err) {
    if (isNoSuchContainer(err)) return 'gone'
    throw err
  }
}

/**
 * The engine's own stop (`stop -t`, which every client spells so; docker 28 deprecates `--time`):
 * STOPSIGNAL, then its SIGKILL after `seconds`. Bounded by those seconds
 * plus `slackMs` for the engine's own work.
 */
export async function stopContainers(client: EngineClient, ids: readonly string[], seconds: number, slackMs: number = ENGINE_CALL_MS_DEFAULT, signal?: AbortSignal): Promise<void> {
  if (ids.length === 0) return
  await engineCall(client, ['stop', '-t', String(seconds), ...ids], seconds * 1000 + slackMs, signal)
}

/**
 * `rm -f`: kill and remove. podman's `rm -f` first stops with the container's stop timeout (10 s by
 * default), so it is told `-t 0`: a forced removal kills at once, as docker's does.
 */
export async function removeContainers(client: EngineClient, ids: readonly string[], timeoutMs?: number, signal?: AbortSignal): Promise<void> {
  if (ids.length === 0) return
  await engineCall(client, ['rm', '-f', ...(client.engine === 'podman' ? ['-t', '0'] : []), ...ids], timeoutMs, signal)
}

/** `kill`: SIGKILL through the engine (the container stays, stopped). */
export async function killContainers(client: EngineClient, ids: readonly string[], timeoutMs?: number, signal?: AbortSignal): Promise<void> {
  if (ids.length === 0) return
  await engineCall(client, ['kill', ...ids], timeoutMs, signal)
}
