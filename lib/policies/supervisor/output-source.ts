/**
 * The text a child writes, as it arrives: what readiness's stdout matcher reads (readiness.ts). One
 * small interface, so that the matcher works over the child's own stdout pipe (childStreams, here)
 * and over any other source of the same chunks (the supervisor's output capture, which drains and
 * keeps each child's output, offers the same `subscribe`).
 */
import type { ChildProcess } from 'node:child_process'
import { StringDecoder } from 'node:string_decoder'

export interface OutputSource {
  /**
   * Calls `onText` with each chunk of `stream` the child writes from now on (UTF-8 text, split
   * anywhere); returns the function that stops it. Nothing when the child has no such pipe.
   */
  subscribe(child: ChildProcess, stream: 'stdout' | 'stderr', onText: (text: string) => void): () => void
}

/**
 * Straight from the child's pipe. Reading it makes the stream flow; once the last reader is gone it
 * is put back as it was found (not flowing), so what comes after is kept for whoever reads it next.
 */
export const childStreams: OutputSource = {
  subscribe(child, stream, onText) {
    const pipe = child[stream]
    if (!pipe) return () => {}
    const wasFlowing = pipe.readableFlowing
    const decoder = new StringDecoder('utf8')
    const onData = (chunk: Buffer | string): void => onText(typeof chunk === 'string' ? chunk : decoder.write(chunk))
    pipe.on('data', onData)
    return () => {
      pipe.off('data', onData)
      if (wasFlowing !== true && pipe.listenerCount('data') === 0 && !pipe.destroyed) {
        pipe.pause()
        // Typed read-only, but Node's Readable sets it: null again, the next reader's on('data') starts it.
        ;(pipe as { readableFlowing: boolean | null }).readableFlowing = wasFlowing
      }
    }
  },
}

/** The longest partial line kept while waiting for its end (a longer one is matched by its tail). */
const MAX_LINE = 64 * 1024

/** Lines from chunks: `onLine` for each complete line (without its \n or \r\n), bounded memory. */
export function lines(onLine: (line: string) => void): (text: string) => void {
  let partial = ''
  return (text) => {
    const parts = (partial + text).split('\n')
    partial = parts.pop()!.slice(-MAX_LINE)
    for (const line of parts) onLine(line.endsWith('\r') ? line.slice(0, -1) : line)
  }
}
