/**
 * The exchanges in flight: a POST call is one work item of the keepalive (begun at arrival, done
 * when its response has ended: the whole SSE stream of a call); a long-lived stream and other
 * exchanges (notifications, DELETE) are tracked but hold no work.
 */
import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Keepalive } from '../../index'
import type { BodyTee } from './body-tee'

export type Kind = 'call' | 'stream' | 'other'

export interface Exchange {
  readonly res: ServerResponse
  kind: Kind
  /** The keepalive's done() of a call; null once over (or abandoned). */
  done: ((served?: boolean) => void) | null
  /** A POST's body, kept beside the stream (its id, for an abandoned call's error). */
  body: BodyTee | null
  /** Ended by the close (not by the SDK). */
  endedHere: boolean
}

export class Exchanges {
  readonly #keepalive: Keepalive
  /** By response: the one 'close' listener below finds its exchange here (no closure per exchange). */
  readonly #byRes = new Map<ServerResponse, Exchange>()
  /** Woken when the last exchange ends (the close waits on it, by event). */
  #emptied: (() => void) | null = null
  /** Long-lived streams that ended during the drain by their SDK or client (not by the close). */
  streamsClosed = 0
  /** One listener for every response, `this` being the response. */
  readonly #onClose: (this: ServerResponse) => void
  /**
   * Pipelined responses queued behind another on their connection (no socket of their own yet), by
   * connection: if it closes first, Node never gives them a socket nor emits their 'close'.
   */
  readonly #queued = new Map<Socket, Set<ServerResponse>>()
  /** One listener for every connection with queued responses, `this` being the connection. */
  readonly #onConnectionClose: (this: Socket) => void

  constructor(keepalive: Keepalive) {
    this.#keepalive = keepalive
    const exchanges = this
    this.#onClose = function onResponseClose(this: ServerResponse) {
      exchanges.#closed(this)
    }
    this.#onConnectionClose = function onConnectionClose(this: Socket) {
      exchanges.#connectionClosed(this)
    }
  }

  /** Starts tracking a response (a call begins its work item now). */
  track(res: ServerResponse, kind: Kind, body: BodyTee | null): Exchange {
    const ex: Exchange = { res, kind, done: kind === 'call' ? this.#keepalive.begin() : null, body, endedHere: false }
    this.#byRes.set(res, ex)
    res.on('close', this.#onClose) // 'close' comes once; #closed() ignores what it no longer tracks
    if (res.socket === null) this.#queue(res)
    return ex
  }

  /** A response queued behind another on its connection: it ends with the connection if it never gets a socket. */
  #queue(res: ServerResponse): void {
    const socket = res.req.socket
    if (socket === null) return
    const queued = this.#queued.get(socket)
    if (queued !== undefined) return void queued.add(res)
    this.#queued.set(socket, new Set([res]))
    // On the request's own socket (an https request's is the TLS socket, not the server's 'connection').
    socket.once('close', this.#onConnectionClose)
  }

  #connectionClosed(socket: Socket): void {
    const queued = this.#queued.get(socket)
    if (queued === undefined) return
    this.#queued.delete(socket)
    for (const res of queued) if (res.socket === null) this.#closed(res)
  }

  #closed(res: ServerResponse): void {
    const ex = this.#byRes.get(res)
    if (ex === undefined) return
    this.#byRes.delete(res)
    if (this.#queued.size !== 0 && res.req.socket !== null) this.#queued.get(res.req.socket)?.delete(res)
    if (this.#byRes.size === 0 && this.#emptied) {
      const wake = this.#emptied
      this.#emptied = null
      wake()
    }
    if (ex.kind === 'stream' && this.#keepalive.state !== 'running' && !ex.endedHere) this.streamsClosed++
    const done = ex.done
    ex.done = null
    // A 202 answered notifications or responses only: not a call. A response that did not finish: its client went away.
    done?.(res.writableFinished && res.statusCode !== 202)
  }

  /** The exchanges now, in the order they began (a copy: ending one while iterating is fine). */
  list(): Exchange[] {
    return [...this.#byRes.values()]
  }

  count(kind: Kind): number {
    let n = 0
    for (const ex of this.#byRes.values()) if (ex.kind === kind) n++
    return n
  }

  /** Waits (bounded) until no exchange is left. */
  waitEmpty(ms: number): Promise<void> {
    if (this.#byRes.size === 0 || ms <= 0) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms)
      timer.unref()
      this.#emptied = () => {
        clearTimeout(timer)
        resolve()
      }
    })
  }
}
