/**
 * Environment knobs (REAPKIT_*_MS). They are read on shutdown paths, where a throw would abort the
 * very cleanup they configure, so a bad value never throws: it is clamped (or replaced by the
 * default) and reported once, as a process warning on stderr.
 */
const reported = new Set<string>()

function report(name: string, message: string): void {
  if (reported.has(name)) return
  reported.add(name)
  process.emitWarning(message, { code: 'REAPKIT_ENV_CLAMPED' })
}

/** Milliseconds from environment variable `name`, or `fallback`; clamped to [min, max]. */
export function envMs(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === '') return fallback
  const value = Number(raw)
  if (!Number.isFinite(value)) {
    report(name, `${name}=${JSON.stringify(raw)} is not a number of milliseconds; using ${fallback}`)
    return fallback
  }
  const clamped = Math.min(max, Math.max(min, Math.round(value)))
  if (clamped !== value) report(name, `${name}=${raw} is outside ${min}..${max} ms; using ${clamped}`)
  return clamped
}

/** Parent poll interval, used only where the kernel cannot notify (DESIGN.md: 2 s). */
export const PARENT_POLL_MS_DEFAULT = 2000

/** The parent poll interval from REAPKIT_PARENT_POLL_INTERVAL_MS (500..60000 ms), or 2000. */
export function parentPollMs(): number {
  return envMs('REAPKIT_PARENT_POLL_INTERVAL_MS', PARENT_POLL_MS_DEFAULT, 500, 60_000)
}
/** Exit poll interval, used only where no pidfd or kqueue exists. */
export const EXIT_POLL_MS_DEFAULT = 100

/** SIGTERM -> SIGKILL grace (DESIGN.md: 9 s, room for a server's 8 s drain). REAPKIT_KILL_GRACE_MS. */
export const KILL_GRACE_MS_DEFAULT = 9000
/** How long to wait for the kill signal to take effect before reporting survivors. */
export const KILL_CONFIRM_MS_DEFAULT = 5000

/** The kill grace from the environment (100..300000 ms), or the default. */
export function killGraceMs(): number {
  return envMs('REAPKIT_KILL_GRACE_MS', KILL_GRACE_MS_DEFAULT, 100, 300_000)
}

/** stdin end (or the client's close) -> exit (DESIGN.md: 2 s, as the MCP SDKs). */
export const CLOSE_TIMEOUT_MS_DEFAULT = 2000

/** The close timeout from REAPKIT_CLOSE_TIMEOUT_MS (250..30000 ms), or 2000. */
export function closeTimeoutMs(): number {
  return envMs('REAPKIT_CLOSE_TIMEOUT_MS', CLOSE_TIMEOUT_MS_DEFAULT, 250, 30_000)
}

/**
 * The slack shutdownAll adds to its derived cap per process it stops: each close costs the event
 * loop some work (signals, timers, exit watches, group listings), serialized on one thread, so the
 * last of N closes ends about N times that after the first. 1 ms is a few times what one close
 * costs on a 2-vCPU machine; 2,000 processes get 2 s more.
 */
export const SHUTDOWN_SLACK_PER_PROCESS_MS = 1

/**
 * The shutdownAll cap: close + grace + 1 s (plus the per-process slack at the call), so that no
 * graceful window is pre-empted.
 * REAPKIT_SHUTDOWN_TIMEOUT_MS (1000..600000 ms) may lengthen it, never shorten it below that.
 */
export function shutdownTimeoutMs(close: number, grace: number): number {
  const derived = close + grace + 1000
  const fromEnv = envMs('REAPKIT_SHUTDOWN_TIMEOUT_MS', derived, 1000, 600_000)
  if (fromEnv < derived) {
    report('REAPKIT_SHUTDOWN_TIMEOUT_MS', `REAPKIT_SHUTDOWN_TIMEOUT_MS=${fromEnv} would cut the ${close} ms close and ${grace} ms grace short; using ${derived}`)
    return derived
  }
  return fromEnv
}

/** The server drain grace (DESIGN.md: 8 s, below the host's 9 s kill grace). REAPKIT_DRAIN_GRACE_MS. */
export const DRAIN_GRACE_MS_DEFAULT = 8000

/** The drain grace from REAPKIT_DRAIN_GRACE_MS (100..300000 ms), or 8000. */
export function drainGraceMs(): number {
  return envMs('REAPKIT_DRAIN_GRACE_MS', DRAIN_GRACE_MS_DEFAULT, 100, 300_000)
}

/**
 * How long spawn() waits for its exec helper to report (group formed, death signal armed, target
 * exec'd) before it returns without that confirmation and says so (spawnedInfo().startup). The
 * wait normally lasts one exec (well under a millisecond to a few ms); the bound is for a stalled
 * machine or a stopped child. REAPKIT_SPAWN_REPORT_MS, 0..60000 ms.
 */
export const SPAWN_REPORT_MS_DEFAULT = 5000

export function spawnReportMs(): number {
  return envMs('REAPKIT_SPAWN_REPORT_MS', SPAWN_REPORT_MS_DEFAULT, 0, 60_000)
}
