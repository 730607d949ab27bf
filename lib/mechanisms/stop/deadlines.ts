/**
 * The deadlines of a stop's bounded waits (phase 1 of a close, the grace, the confirm), and who
 * keeps them: a timer of the wait's own (a stop on its own), or one timer for the waits of many
 * stops begun together (shutdownAll's thousands: SharedDeadlines).
 *
 * Why share: a deadline ends in signals, and thousands of children signalled in a trickle cost far
 * more than the same children signalled in one go. libuv's SIGCHLD handler calls waitpid() on every
 * child it has, once per SIGCHLD delivered: 5,000 children SIGKILLed in one synchronous loop cost one
 * such pass (~5,000 waitpid() calls, all exits seen in ~0.3 s), the same kills in 10 bursts 10 ms apart
 * ~2.7 million calls and 2.5 s, the event loop held all along (bench/exitscale.mjs shutdown; measured
 * with perf's syscall counts). Deadlines within `slackMs` of each other end together, in one timer
 * callback, so the stops' signals go out in one loop turn.
 */
import { settlesWithinUnlessAborted } from '../../ground/wait'

const now = (): number => performance.now()

export interface Deadlines {
  /**
   * True when `promise` settles (either way) by `at` (performance.now() time); false once the
   * deadline has come first, or as soon as `abort` fires. Nothing of the wait outlives it.
   */
  settlesBy(promise: Promise<unknown>, at: number, abort?: AbortSignal): Promise<boolean>
}

/** Each wait on a timer of its own, ending at its deadline. */
export const ownTimers: Deadlines = {
  settlesBy: (promise, at, abort) => settlesWithinUnlessAborted(promise, at - now(), abort),
}

/** Waits ending together: the earliest deadline among them (`start`), the latest (`end`), one timer. */
interface Cluster {
  start: number
  end: number
  waiters: Set<() => void>
  timer: NodeJS.Timeout
}

/**
 * One timer for many waits: a wait ends at its deadline or at most `slackMs` after it, together
 * with every other wait whose deadline falls within `slackMs` of the earliest one still pending
 * among them. Each wait costs O(1) plus a look at the clusters pending (a handful: deadlines
 * `slackMs` apart or more).
 */
export class SharedDeadlines implements Deadlines {
  private readonly clusters: Cluster[] = []

  constructor(readonly slackMs: number) {}

  settlesBy(promise: Promise<unknown>, at: number, abort?: AbortSignal): Promise<boolean> {
    if (abort?.aborted || at <= now()) return settlesWithinUnlessAborted(promise, 0, abort)
    let end!: () => void
    const deadline = new Promise<false>((res) => (end = () => res(false)))
    const cluster = this.join(at, end)
    const onAbort = (): void => end()
    abort?.addEventListener('abort', onAbort, { once: true })
    const settled = promise.then(
      () => true,
      () => true,
    )
    return Promise.race([settled, deadline]).finally(() => {
      abort?.removeEventListener('abort', onAbort)
      this.leave(cluster, end)
    })
  }

  /** Adds a wait ending at `at` to the cluster it falls in (a new one if none). */
  private join(at: number, end: () => void): Cluster {
    let cluster = this.clusters.find((c) => at >= c.start && at <= c.start + this.slackMs)
    if (!cluster) {
      const made: Cluster = { start: at, end: at, waiters: new Set(), timer: undefined as unknown as NodeJS.Timeout }
      made.timer = setTimeout(() => this.fire(made), at - now())
      this.clusters.push((cluster = made))
    }
    if (at > cluster.end) cluster.end = at // its timer, set for an earlier end, is moved on when it fires
    cluster.waiters.add(end)
    return cluster
  }

  /** The cluster's timer: every wait in it ends now, unless one joined it with a later deadline. */
  private fire(cluster: Cluster): void {
    const left = cluster.end - now()
    if (left > 0) {
      cluster.timer = setTimeout(() => this.fire(cluster), left)
      return
    }
    this.drop(cluster)
    for (const end of cluster.waiters) end()
  }

  /** A wait that ended (settled, aborted, or at its deadline) leaves its cluster; the last one takes the timer along. */
  private leave(cluster: Cluster, end: () => void): void {
    cluster.waiters.delete(end)
    if (cluster.waiters.size === 0) this.drop(cluster)
  }

  private drop(cluster: Cluster): void {
    clearTimeout(cluster.timer)
    const i = this.clusters.indexOf(cluster)
    if (i >= 0) this.clusters.splice(i, 1)
  }
}
