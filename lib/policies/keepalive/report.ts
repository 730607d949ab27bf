/**
 * The shutdown report (what report() returns, the hooks get and the final line says), and the end:
 * the flush, the final line on stderr, the exit status.
 */
import { type Logger, logEvent } from '../../ground/logger'
import { settlesWithin } from '../../ground/wait'
import type { ShutdownReport } from './types'
import type { Phase, WorkRegistry } from './work'

export type ReportExtension = () => Record<string, number | string | boolean>

export class Reporter {
  readonly #phase: Phase
  readonly #work: WorkRegistry
  readonly #logger: Logger | undefined
  readonly extensions: ReportExtension[] = []

  constructor(phase: Phase, work: WorkRegistry, logger: Logger | undefined) {
    this.#phase = phase
    this.#work = work
    this.#logger = logger
  }

  /** The report as it stands now. */
  report(): ShutdownReport {
    const work = this.#work
    const { reason, triggeredAt } = this.#phase
    const own: ShutdownReport = {
      event: 'shutdown',
      reason: reason ?? 'none',
      served: work.served,
      drained: work.drained,
      abandoned: work.abandoned,
      refused: work.refused,
      elapsedMs: triggeredAt ? Math.round(performance.now() - triggeredAt) : 0,
    }
    if (this.extensions.length === 0) return own
    // The report's own fields last: an extension adds, it never rewrites.
    return Object.assign({ ...own }, this.#extra(), own)
  }

  /** What the extensions add; a number two of them both give is summed. */
  #extra(): Record<string, unknown> {
    const extra: Record<string, unknown> = {}
    for (const fields of this.extensions) {
      try {
        for (const [key, value] of Object.entries(fields())) {
          const before = extra[key]
          extra[key] = typeof before === 'number' && typeof value === 'number' ? before + value : value
        }
      } catch (err) {
        logEvent(this.#logger, 'error', 'keepalive.report-extension-error', { error: String(err) })
      }
    }
    return extra
  }
}

/** Waits until everything written so far to `stream` has been handed to the OS (bounded). */
function flushed(stream: NodeJS.WriteStream, ms: number): Promise<boolean> {
  if (stream.destroyed || !stream.writable) return Promise.resolve(true)
  return settlesWithin(new Promise<void>((res) => stream.write('', () => res())), ms)
}

/**
 * Flushes what was written, so that no JSON-RPC frame is cut, then writes the final line (unless
 * `finalLine` is false) and flushes it. Returns the final report.
 */
export async function writeFinalReport(reporter: Reporter, finalLine: boolean, flushTimeoutMs: number): Promise<ShutdownReport> {
  await flushed(process.stdout, flushTimeoutMs)
  const final = reporter.report()
  if (finalLine) process.stderr.write(JSON.stringify(final) + '\n')
  await flushed(process.stderr, flushTimeoutMs)
  return final
}
