/**
 * The drain's phases, as keepalive steps: its first moment (stop taking new work, close idle
 * connections), the abandon (calls still running when the grace is over get their error), and the
 * close (the SDK ends its streams, then whatever still streams is ended here, then the connections).
 */
import type { Closable } from './keepalive'
import { endHere } from './answers'
import { closablesOf, sizeOf } from './closables'
import type { HttpDrain } from './context'

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)).unref())

/** Stops the listening socket (once), also when the drain began before listen() completed. */
function closeListener(drain: HttpDrain): void {
  if (drain.listenerClosed) return
  drain.listenerClosed = true
  const { server } = drain
  if (server.listening) server.close(() => {})
  else server.once('listening', () => server.close(() => {}))
}

/** The first moment of the drain: idle connections go now; a response not yet started closes its connection after it. */
function atDrain(drain: HttpDrain): void {
  drain.counts.sessionsAtTrigger = sizeOf(drain.settings.mcp)
  if (drain.settings.stopAccepting === 'at-drain') closeListener(drain)
  drain.server.closeIdleConnections?.()
  for (const ex of drain.exchanges.list()) if (!ex.res.headersSent) ex.res.shouldKeepAlive = false
}

/**
 * The grace is over with calls still running: each gets its error response, as its last event,
 * before any shutdown hook runs (one that stops the processes behind them would let the SDK answer
 * them as if they had ended normally).
 */
function abandonCalls(drain: HttpDrain): void {
  for (const ex of drain.exchanges.list()) {
    if (ex.kind !== 'call') continue
    ex.done = null // not served: the keepalive counted it abandoned
    endHere(drain, ex, true)
  }
}

/** Closes what `mcp` names; warns (and closes nothing) when reading it throws. */
function closeMcp(drain: HttpDrain): Promise<unknown> {
  let closables: Closable[] = []
  try {
    closables = closablesOf(drain.settings.mcp)
  } catch (err) {
    process.emitWarning(`withHttpKeepalive: reading the "mcp" option failed: ${String(err)}`)
  }
  return Promise.allSettled(closables.map((c) => Promise.resolve().then(() => c.close())))
}

/** The close, bounded within its own hook bound: 2 x streamCloseTimeoutMs and the last writes. */
async function close(drain: HttpDrain): Promise<void> {
  const { exchanges, counts } = drain
  const { streamCloseTimeoutMs } = drain.settings
  closeListener(drain)
  // The SDK ends its long-lived streams its own way (2.x: the graceful empty listen result).
  const closing = closeMcp(drain)
  const until = performance.now() + streamCloseTimeoutMs
  await Promise.race([closing, delay(streamCloseTimeoutMs)])
  await exchanges.waitEmpty(until - performance.now())
  // What still streams ends between two events; what has not started gets its 503.
  for (const ex of exchanges.list()) {
    if (ex.kind === 'stream') counts.streamsEnded++
    endHere(drain, ex, false)
  }
  await exchanges.waitEmpty(streamCloseTimeoutMs)
  counts.connectionsClosed += drain.connections.live()
  drain.server.closeAllConnections?.()
  drain.probeServer?.close()
}

/** Puts the phases on the keepalive: at its drain, at its abandon, as its first shutdown hook of ours. */
export function installPhases(drain: HttpDrain): void {
  const { keepalive } = drain
  keepalive.onDrain(() => atDrain(drain))
  keepalive.abandonSignal.addEventListener('abort', () => abandonCalls(drain), { once: true })
  keepalive.onShutdown(() => close(drain), { timeoutMs: 2 * drain.settings.streamCloseTimeoutMs + 1000 })
}

/** The report's HTTP fields. */
export function reportFields(drain: HttpDrain): Record<string, number> {
  const { counts } = drain
  return {
    sessions: counts.sessionsAtTrigger,
    streams: drain.exchanges.streamsClosed + counts.streamsEnded,
    streamsEnded: counts.streamsEnded,
    connections: counts.connectionsClosed,
  }
}
