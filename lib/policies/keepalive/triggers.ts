/**
 * What starts the drain: the signals, stdin's end (or the writer's hang-up of a stdin nobody
 * reads), and the parent's death. Each trigger calls `shutdown(reason)`; a cause that arrives just
 * behind another may correct the reason (a host that signals its whole group kills our parent too).
 */
import { type Logger, logEvent } from '../../ground/logger'
import { nativeBinding } from '../../ground/native'
import { type ParentWatcher, watchParent } from '../../mechanisms/parent'
import { applicationReadsStdin, watchStdinHangup } from '../../mechanisms/stdin-hangup'
import type { Phase } from './work'

/** Within this long of the trigger, a later cause is taken as the cause of both. */
const SAME_CAUSE_MS = 100

export interface TriggerOptions {
  signals: NodeJS.Signals[]
  stdin: boolean
  parentDeath: boolean
  logger: Logger | undefined
  phase: Phase
  /** The work in flight now (for the log line of a double Ctrl+C). */
  inFlight: () => number
  shutdown: (reason: string) => unknown
}

export interface Triggers {
  /** The signal the kernel sends us when the parent dies, or false. */
  readonly deathSignal: NodeJS.Signals | false
  /** Whether the parent is watched (the parentDeath option). */
  readonly watchesParent: boolean
  /** Resolves when the parent watcher has seen the parent's exit (never, without one). */
  readonly parentExit: Promise<void>
  /** Removes every listener and watcher. */
  dispose(): void
}

export function installTriggers(options: TriggerOptions): Triggers {
  const { signals } = options
  // The kernel's parent-death signal is SIGHUP, its traditional meaning ("your side hung up"), so
  // that a SIGTERM always means a SIGTERM (see watchParentDeath).
  const deathSignal: NodeJS.Signals | false =
    !options.parentDeath ? false : signals.includes('SIGHUP') ? 'SIGHUP' : signals.includes('SIGTERM') ? 'SIGTERM' : false
  let parent: { watcher: ParentWatcher; exited: Promise<void> } | null = null
  /** Our parent is no longer the one the watcher pinned (it died; we were re-parented). */
  const parentGoneNow = (): boolean => {
    const binding = nativeBinding()
    return parent !== null && binding !== null && binding.getppid() !== parent.watcher.parentPid
  }
  // In this order: the signals first, the parent watcher (which may fire at once) last.
  const removers = [watchSignals(options, deathSignal, parentGoneNow)]
  if (options.stdin) removers.push(watchStdinEnd(options, parentGoneNow))
  if (options.parentDeath) {
    const watched = watchParentDeath(options, deathSignal)
    parent = watched
    removers.push(() => watched.watcher.close())
  }
  return {
    deathSignal,
    watchesParent: parent !== null,
    parentExit: parent?.exited ?? new Promise<void>(() => {}),
    dispose: () => {
      for (const remove of removers.splice(0)) remove()
    },
  }
}

function watchSignals(options: TriggerOptions, deathSignal: NodeJS.Signals | false, parentGoneNow: () => boolean): () => void {
  const { phase, logger } = options
  let sigints = 0
  const onSignal = (sig: NodeJS.Signals): void => {
    if (sig === 'SIGINT' && ++sigints >= 2) {
      // A person pressing Ctrl+C twice: leave now, with the conventional status.
      logEvent(logger, 'warn', 'keepalive.interrupted', { inFlight: options.inFlight() })
      process.exit(130)
    }
    // A host that signals the whole group kills our parent too: its death (the kernel's SIGHUP,
    // delivered first when both are pending, or the exit event) can reach us just before the host's
    // own signal, which is then the cause of both.
    const byParent = phase.reason === deathSignal || phase.reason === 'parent-death'
    if (phase.state !== 'running' && byParent && sig !== deathSignal && performance.now() - phase.triggeredAt < SAME_CAUSE_MS) {
      phase.reason = sig
    }
    // The death signal itself: if the parent is already gone, say so.
    const parentGone = sig === deathSignal && parentGoneNow()
    options.shutdown(parentGone ? 'parent-death' : sig)
  }
  const handlers = options.signals.map((sig) => {
    const handler = (): void => onSignal(sig)
    process.on(sig, handler)
    return () => process.off(sig, handler)
  })
  return () => handlers.forEach((remove) => remove())
}

function watchStdinEnd(options: TriggerOptions, parentGoneNow: () => boolean): () => void {
  const onEnd = (): void => {
    options.shutdown(parentGoneNow() ? 'parent-death' : 'stdin-end')
  }
  process.stdin.on('end', onEnd)
  process.stdin.on('close', onEnd)
  // A server that never reads stdin never gets its 'end': the writer's hang-up, seen natively
  // without reading, stands in for it once nothing is left to read. One that reads drains at
  // 'end', after its last byte; bytes left unread are the application's, for it to read first.
  const hangup = watchStdinHangup((unread) => {
    if (unread <= 0 && !applicationReadsStdin()) onEnd()
  })
  logEvent(options.logger, 'debug', 'keepalive.stdin-watch', { kind: hangup.kind })
  return () => {
    process.stdin.off('end', onEnd)
    process.stdin.off('close', onEnd)
    hangup.close()
  }
}

/**
 * The death signal reaches us even while the event loop is blocked; the process-level exit event
 * follows within a few ms (a multi-threaded parent's main thread dies first, and getppid() still
 * names the parent until the rest of it is gone). A drain that the death signal started just
 * before that event was the parent's.
 */
function watchParentDeath(options: TriggerOptions, deathSignal: NodeJS.Signals | false): { watcher: ParentWatcher; exited: Promise<void> } {
  const { phase } = options
  let parentExited!: () => void
  const exited = new Promise<void>((resolve) => (parentExited = resolve))
  const watcher = watchParent({
    deathSignal,
    onExit: () => {
      // The host's death also ends our stdin (it held the pipe): within 100 ms, that was the cause.
      const byDeath = phase.reason === deathSignal || phase.reason === 'stdin-end'
      if (byDeath && performance.now() - phase.triggeredAt < SAME_CAUSE_MS) phase.reason = 'parent-death'
      parentExited()
      options.shutdown('parent-death')
    },
  })
  return { watcher, exited }
}
