/**
 * A POST's body, kept beside the stream that the SDK reads (BodyTee), and what it carries: a
 * JSON-RPC request (new work, with its id) or only notifications and responses.
 */
import { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'

/** What a JSON-RPC body carries: a request (new work, with its id), or only notifications and responses. */
interface BodyKind {
  request: boolean
  id: string | number | null
}

function classifyBody(body: Buffer | null): BodyKind {
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

const kTee = Symbol('reapkit.bodyTee')

/** A request built by the server's tee class (teeByClass): its tee, while its body is being taken. */
type TeeRequest = IncomingMessage & { [kTee]: BodyTee | null }

/** Marks the push() of a tee class (there is one class per server). */
const kTeePush = Symbol('reapkit.teePush')

/** Whether the request's chunks reach its tee through its class's push(). */
const teedByClass = (req: IncomingMessage): boolean => (req.push as { [kTeePush]?: true })[kTeePush] === true

/**
 * Makes a server's requests feed their tees by class: node:http builds each request from the class
 * that createServer()'s `IncomingMessage` option names, which it keeps on the server (under a symbol
 * described 'IncomingMessage') and reads for every request. Installed there, a subclass whose push()
 * hands each chunk to the request's tee costs a request nothing but one field: a push() wrapper of
 * its own on every request was a closure and an own property (a second shape for every request).
 * False where the server keeps no such class (not node:http's): each tee then wraps its request's push().
 */
export function teeByClass(server: object): boolean {
  const slot = Object.getOwnPropertySymbols(server).find((symbol) => symbol.description === 'IncomingMessage')
  if (slot === undefined) return false
  const Base = (server as Record<symbol, unknown>)[slot]
  if (typeof Base !== 'function' || (Base !== IncomingMessage && !(Base.prototype instanceof IncomingMessage))) return false
  // The same name as the class it extends (what logs and util.inspect() print of a request stays as
  // it was), given where the class is written, as the key of an object literal: never by redefining
  // `name` afterwards, which cost every request built from the class ~3 us more in Node 20 (a
  // trivial node:http server, 20 us of CPU per request: 23 with it, 20 with the name given here).
  const name = Base.name
  const TeeIncomingMessage = {
    [name]: class extends (Base as typeof IncomingMessage) {
      [kTee]: BodyTee | null = null
      override push(chunk: unknown, encoding?: BufferEncoding): boolean {
        const accepted = super.push(chunk, encoding)
        const tee = this[kTee]
        if (tee != null) tee.pushed(chunk, encoding, accepted)
        return accepted
      }
    },
  }[name]!
  Object.defineProperty(TeeIncomingMessage.prototype.push, kTeePush, { value: true })
  ;(server as Record<symbol, unknown>)[slot] = TeeIncomingMessage
  return true
}

/**
 * The late push() of a request (BodyTee's follow()): whatever push() its prototype has at each chunk;
 * its tee takes the chunk unless that push() is the class's, which hands it to the tee itself.
 */
function latePush(this: TeeRequest, chunk: unknown, encoding?: BufferEncoding): boolean {
  const push = (Object.getPrototypeOf(this) as IncomingMessage).push
  const accepted = push.call(this, chunk, encoding)
  if ((push as { [kTeePush]?: true })[kTeePush] !== true) this[kTee]?.pushed(chunk, encoding, accepted)
  return accepted
}

/** Takes latePush() off, only if still there (a handler may have put its own over it): the prototype answers again. */
function unwrapLate(req: TeeRequest): void {
  req[kTee] = null
  if (req.push === latePush) delete (req as Partial<IncomingMessage>).push
}

/** The tees to look at again a microtask after their handlers (one microtask for all the requests of a tick). */
let toFollow: BodyTee[] | null = null

function followLater(tee: BodyTee): void {
  if (toFollow !== null) return void toFollow.push(tee)
  toFollow = [tee]
  queueMicrotask(followAll)
}

function followAll(): void {
  const tees = toFollow!
  toFollow = null
  for (const tee of tees) tee.follow()
}

/**
 * The body of a request as the HTTP parser pushes it into the stream (it does, chunk by chunk,
 * through the request's push()), kept beside the stream without reading it: whoever handles the
 * request reads it as usual. It keeps references to the chunks (no copy) up to `max` bytes, and
 * parses them only when asked (kind()): a server that is not draining pays one array push per chunk.
 */
export class BodyTee {
  readonly #req: IncomingMessage
  readonly #max: number
  /** Takes off the push() wrapper of this request (at the body's end); null while the class tees. */
  #unwrap: ((req: TeeRequest) => void) | null = null
  #chunks: Buffer[] | null = null
  #size = 0
  #over = false
  #ended = false
  #holding = false
  #kind: BodyKind | null = null
  #waiters: Array<() => void> | null = null

  constructor(req: IncomingMessage, max: number) {
    this.#req = req
    this.#max = max
    if (req.complete || req.readableEnded) {
      this.#over = true // the body went by already
      this.#ended = true
    } else if (teedByClass(req)) {
      ;(req as TeeRequest)[kTee] = this
    } else {
      this.#wrapPush()
    }
  }

  /**
   * After the request's handlers had it. One that gave the request another prototype (Express does,
   * before any chunk of the body is pushed) took the class's push() away: a wrapper takes the chunks
   * now. One that does so later, after an await (auth, then Express), cannot be seen here: the body
   * still arriving once this tick's parsing is over (followLater) gets a wrapper of its own then.
   */
  afterHandlers(): void {
    if (this.#ended || this.#unwrap !== null) return
    if (!teedByClass(this.#req)) this.#wrapLate()
    else followLater(this)
  }

  /**
   * A microtask after the handlers, before any chunk of the body was pushed: node:http's parser runs
   * its callbacks on the connection's socket one by one, with the microtasks between them, so even a
   * request that came whole in one packet has not pushed its body yet (Node 20: a POST sent in one
   * write, its body 0 bytes read here and complete by the next setImmediate). So every POST gets its
   * own push() here, which takes the chunks whatever the prototype becomes (an await of the handler
   * may swap it before or after this). Measured (issue 19 item 7): ~1 us of CPU per request on a
   * trivial node:http server (the whole drain ~2.8 us there, ~0.9 KB allocated per request).
   */
  follow(): void {
    if (!this.#ended && this.#unwrap === null) this.#wrapLate()
  }

  /** An own push() calling whatever push() the request's prototype has at each chunk (the class's no longer tees). */
  // One function for every request (latePush, unwrapLate): it runs on every POST (see follow()), and
  // two closures per request were ~130 bytes more to collect.
  #wrapLate(): void {
    const req = this.#req as TeeRequest
    req[kTee] = this
    req.push = latePush
    this.#unwrap = unwrapLate
  }

  /** A wrapper around the push() the request has (its server keeps no request class to tee by): it is put back at the end. */
  #wrapPush(): void {
    const req = this.#req
    const push = req.push
    const tee = this
    req.push = function teePush(this: IncomingMessage, chunk: unknown, encoding?: BufferEncoding): boolean {
      const accepted = push.call(this, chunk, encoding)
      tee.pushed(chunk, encoding, accepted)
      return accepted
    }
    this.#unwrap = () => void (req.push = push)
  }

  /** A chunk the request's stream was given (null: the body's end), and whether it took it without going over its highWaterMark. */
  pushed(chunk: unknown, encoding: BufferEncoding | undefined, accepted: boolean): void {
    if (chunk === null) this.#end()
    else this.#take(chunk, encoding, accepted)
  }

  /** The request ended before its body did (aborted, failed): what it carried cannot be known. */
  #gone(): void {
    if (!this.#ended) this.#over = true
    this.#end()
  }

  #take(chunk: unknown, encoding: BufferEncoding | undefined, accepted: boolean): void {
    if (this.#over) return
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, encoding)
    this.#size += buf.length
    if (this.#size > this.#max) {
      this.#over = true
      this.#chunks = null
      if (this.#holding) this.#end() // it will not be known: stop holding the request
      return
    }
    if (this.#chunks === null) this.#chunks = [buf]
    else this.#chunks.push(buf)
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
    if (this.#unwrap !== null) this.#unwrap(this.#req as TeeRequest)
    else (this.#req as TeeRequest)[kTee] = null
    const waiters = this.#waiters
    this.#waiters = null
    if (waiters !== null) for (const wake of waiters) wake()
  }

  /** What the body carries; null while it is not all here. */
  kind(): BodyKind | null {
    if (!this.#ended) return null
    this.#kind ??= classifyBody(this.#over ? null : Buffer.concat(this.#chunks ?? [], this.#size))
    this.#chunks = null
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
      const gone = (): void => this.#gone()
      req.once('close', gone)
      req.once('error', gone)
    }
    if (this.#ended) return Promise.resolve(this.kind()!)
    if (this.#size > 0) setImmediate(() => this.#readOn())
    return new Promise((resolve) => (this.#waiters ??= []).push(() => resolve(this.kind()!)))
  }
}
