/**
 * A POST's body, kept beside the stream that the SDK reads (BodyTee), and what it carries: a
 * JSON-RPC request (new work, with its id) or only notifications and responses.
 */
import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'

/** What a JSON-RPC body carries: a request (new work, with its id), or only notifications and responses. */
export interface BodyKind {
  request: boolean
  id: string | number | null
}

export function classifyBody(body: Buffer | null): BodyKind {
  if (body === null) return { request: true, id: null } // unreadable here: taken for new work
  let parsed: unknown
  try {
    parsed = JSON.parse(body.toString('utf8'))
  } catch {
    return { request: true, id: null }
  }
  for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
    if (typeof message !== 'object' || message === null) return { request: true, id: null }
    const { method, id } = message as { method?: unknown; id?: unknown }
    if (typeof method === 'string' && id !== undefined) {
      return { request: true, id: typeof id === 'string' || typeof id === 'number' ? id : null }
    }
  }
  return { request: false, id: null }
}

/**
 * The body of a request as the HTTP parser pushes it into the stream (it does, chunk by chunk,
 * through the instance's push()), kept beside the stream without reading it: whoever handles the
 * request reads it as usual. It keeps references to the chunks (no copy) up to `max` bytes, and
 * parses them only when asked (kind()): a server that is not draining pays one array push per chunk.
 */
export class BodyTee {
  readonly #req: IncomingMessage
  readonly #max: number
  readonly #push: IncomingMessage['push']
  #chunks: Buffer[] = []
  #size = 0
  #over = false
  #ended = false
  #holding = false
  #kind: BodyKind | null = null
  #waiters: Array<() => void> = []

  constructor(req: IncomingMessage, max: number) {
    this.#req = req
    this.#max = max
    this.#push = req.push
    if (req.complete || req.readableEnded) {
      this.#over = true // the body went by already
      this.#ended = true
      return
    }
    const tee = this
    req.push = function teePush(this: IncomingMessage, chunk: unknown, encoding?: BufferEncoding): boolean {
      const accepted = tee.#push.call(this, chunk, encoding)
      if (chunk === null) tee.#end()
      else tee.#take(chunk, encoding, accepted)
      return accepted
    }
  }

  /** The request ended before its body did (aborted, failed): what it carried cannot be known. */
  #gone = (): void => {
    if (!this.#ended) this.#over = true
    this.#end()
  }

  #take(chunk: unknown, encoding: BufferEncoding | undefined, accepted: boolean): void {
    if (this.#over) return
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, encoding)
    this.#size += buf.length
    if (this.#size > this.#max) {
      this.#over = true
      this.#chunks = []
      if (this.#holding) this.#end() // it will not be known: stop holding the request
      return
    }
    this.#chunks.push(buf)
    // Held until its body is known, nobody reads the stream: past its highWaterMark the parser stops
    // reading the socket (readStop) and would wait for a reader forever. Read on, up to `max`.
    if (!accepted && this.#holding) setImmediate(() => this.#readOn())
  }

  #readOn(): void {
    const socket = this.#req.socket as Socket & { _paused?: boolean }
    if (!this.#ended && socket && !socket.destroyed && !socket._paused) socket.resume()
  }

  #end(): void {
    if (this.#ended) return
    this.#ended = true
    this.#req.push = this.#push
    for (const wake of this.#waiters.splice(0)) wake()
  }

  /** What the body carries; null while it is not all here. */
  kind(): BodyKind | null {
    if (!this.#ended) return null
    this.#kind ??= classifyBody(this.#over ? null : Buffer.concat(this.#chunks, this.#size))
    this.#chunks = []
    return this.#kind
  }

  /** Resolves with what the body carries once it is all here (reading on past the stream's buffer). */
  whenKnown(): Promise<BodyKind> {
    this.#holding = true
    if (this.#ended) return Promise.resolve(this.kind()!)
    // Listened for only here, where someone waits: a request served as usual costs no listeners
    // (kind() of a body that never ended is null, which its one reader, the abandon, takes as no id).
    const req = this.#req
    if (req.destroyed) this.#gone()
    else {
      req.once('close', this.#gone)
      req.once('error', this.#gone)
    }
    if (this.#ended) return Promise.resolve(this.kind()!)
    if (this.#size > 0) setImmediate(() => this.#readOn())
    return new Promise((resolve) => this.#waiters.push(() => resolve(this.kind()!)))
  }
}
