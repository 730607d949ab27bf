/**
 * The stops' parts (killProcessGracefully, closeClient), loaded right after the first spawn().
 *
 * A stop is often the first call of its part, and comes at shutdown: by then the package may have
 * been replaced on disk (an in-place upgrade under a running service), and a part of another build
 * is refused (scripts/build-parts.mjs), so the stop would fail where it matters most. A process
 * that spawned has children to stop: it loads the stops while its own build is still on disk.
 * Right after the spawn, not in it, so that spawn() costs what it did; an unref'd immediate, so that
 * it keeps no process alive. A load that fails now (the package already replaced) is left for the
 * stop itself to report when called.
 */
import stopClosePart from './lazy/stop-close'
import stopKillPart from './lazy/stop-kill'

let scheduled = false

export function loadStopsSoon(): void {
  if (scheduled) return
  scheduled = true
  setImmediate(() => {
    try {
      stopKillPart()
      stopClosePart()
    } catch {
      // reported by the stop, when called
    }
  }).unref()
}
