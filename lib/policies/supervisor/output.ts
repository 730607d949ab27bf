/**
 * The output a Supervisor keeps of its children: every incarnation's stdout and stderr, drained as
 * they are written (a pipe nobody reads would otherwise fill, and the child block on its next
 * write for ever while its status reads `running`), kept in rings (output-ring.ts) within two
 * bounds, and read by offset or followed.
 *
 * The tee is at the stream's push(): every chunk goes to the ring as it arrives from the pipe,
 * before anyone reads it, and the stream is not made to flow (a 'data' listener would make it flow
 * at once, and a caller who attaches a reader after an `await` would lose what came meanwhile). So
 * a reader of the caller's, attached whenever, gets every byte as long as the child wrote no more
 * than the stream's buffer (its readableHighWaterMark: 16 KiB on Node 20, 64 KiB from Node 22)
 * before it came. Only when nobody reads and that buffer is full, and the caller never paused the
 * stream (readableFlowing still null), is the stream let flow, unread, so that the child never
 * blocks; the ring has every byte all the same. A caller's pause() (or pipe()'s backpressure)
 * leaves the stream paused: that is the caller's own choice, and the child may block on it.
 *
 * Bounds: `perChildBytes` for one child (the ring bytes of all its incarnations, both streams) and
 * `totalBytes` for the supervisor, which also counts a fixed overhead per incarnation, so silent
 * children cannot pile up either. At a bound, ended incarnations go first, the earliest ended
 * first (the child's own ones for its bound, anyone's for the supervisor's); if that is not
 * enough, the stream being written keeps fewer of its own newest bytes. A new incarnation's
 * overhead is charged even when no ended one is left to drop: running children are bounded by the
 * supervisor's own registry, and the rings then give the room back as they are written.
 */
import type { ChildProcess } from 'node:child_process'
import type { Readable } from 'node:stream'
import { rangeError, typeError } from '../../ground/errors'
import { describe, validateOptions } from '../../ground/validate'
import { type Align, type RingPage, StreamRing } from './output-ring'

export type OutputStream = 'stdout' | 'stderr'

/** The `output` option of a Supervisor: its bounds, or false to keep nothing (pipes are drained all the same). */
export interface OutputOptions {
  /** The bytes one child keeps, all its incarnations and both streams together. Default 64 KiB. */
  perChildBytes?: number
  /** What the whole supervisor keeps: every ring, plus 512 bytes per incarnation kept. Default 16 MiB. */
  totalBytes?: number
}

export interface OutputReadOptions {
  /** Default 'stdout'. */
  stream?: OutputStream
  /** Which incarnation: 0 the first, n after n restarts (`record.restarts`). Default: the newest. */
  incarnation?: number
  /** A byte offset into that stream (what it wrote since the incarnation started). Default 0. */
  offset?: number
  /** Default 64 KiB, at most 16 MiB. */
  maxBytes?: number
  /** 'bytes' (default), 'utf8' (never splits a character) or 'lines' (whole lines only). */
  align?: Align
}

/** A page of one incarnation's stream (`sup.output()`), or one step of `sup.followOutput()`. */
export interface OutputPage extends RingPage {
  incarnation: number
  pid: number
  stream: OutputStream
  /** The stream ended (its pipe closed): no byte follows `total`. */
  ended: boolean
}

/** An 'output' event: one chunk an incarnation wrote, at `offset` in its stream. */
export interface OutputChunk {
  requestId: string | number | null
  pid: number
  incarnation: number
  stream: OutputStream
  offset: number
  data: Buffer
}

declare module './record' {
  interface SupervisorEvents {
    /** A chunk a child wrote to its piped stdout or stderr (every chunk, kept or not; not a copy of the record: it is frequent). */
    output: [chunk: OutputChunk]
  }
}

export const OUTPUT_DEFAULTS = { perChildBytes: 64 * 1024, totalBytes: 16 * 1024 * 1024 }
/** What one incarnation costs beyond its rings (its objects and their index entries): a safe side. */
export const INCARNATION_OVERHEAD = 512
const MAX_PAGE = 16 * 1024 * 1024

/** One incarnation's two streams. */
interface Kept {
  n: number
  pid: number
  child: ChildOutput
  stdout: StreamRing
  stderr: StreamRing
}

/** One child (one record): its incarnations still kept, oldest first, and what they cost. */
interface ChildOutput {
  kept: Kept[]
  used: number
}

export class OutputStore {
  readonly perChildBytes: number
  readonly totalBytes: number
  /** false: nothing is kept (the pipes are drained all the same). */
  readonly keep: boolean
  readonly #children = new WeakMap<object, ChildOutput>()
  /** Every incarnation whose streams both ended, the earliest first: what a bound drops first. */
  readonly #ended = new Set<Kept>()
  /** Each owner's followers' wake-ups: a chunk or an end wakes the followers of its own child only. */
  readonly #followers = new Map<object, Set<() => void>>()
  #used = 0

  constructor(options: OutputOptions | false | undefined) {
    this.keep = options !== false
    const o = options === false ? {} : validateOptions(options ?? {}, 'output')
    this.perChildBytes = bytes(o.perChildBytes, 'output.perChildBytes') ?? OUTPUT_DEFAULTS.perChildBytes
    this.totalBytes = bytes(o.totalBytes, 'output.totalBytes') ?? Math.max(OUTPUT_DEFAULTS.totalBytes, this.perChildBytes)
  }

  /** The memory charged to the supervisor's bound: ring capacity plus each incarnation's overhead. */
  get usedBytes(): number {
    return this.#used
  }

  /**
   * Drains an incarnation's stdout and stderr (a tee: see the top of this file) into the rings of
   * `owner` (the child's record: one per child, across restarts). `n`: the incarnation's number.
   */
  attach(owner: object, child: ChildProcess, n: number, onChunk?: (stream: OutputStream, offset: number, data: Buffer) => void): void {
    const streams = { stdout: child.stdout, stderr: child.stderr }
    if (!streams.stdout && !streams.stderr) return
    if (!this.keep) {
      for (const s of Object.values(streams)) if (s) teeAtPush(s, null, noop)
      return
    }
    let c = this.#children.get(owner)
    if (!c) this.#children.set(owner, (c = { kept: [], used: 0 }))
    const k: Kept = { n, pid: child.pid ?? -1, child: c, stdout: new StreamRing(), stderr: new StreamRing() }
    this.#makeRoom(c, 0, k, INCARNATION_OVERHEAD)
    c.kept.push(k)
    this.#used += INCARNATION_OVERHEAD
    for (const name of ['stdout', 'stderr'] as const) {
      const stream = streams[name]
      const ring = k[name]
      if (!stream) {
        ring.ended = true
        continue
      }
      const chunk = (buf: Buffer): void => {
        const offset = ring.total
        this.#write(k, ring, buf)
        onChunk?.(name, offset, buf)
        this.#wakeUp(owner)
      }
      const end = (): void => {
        if (ring.ended) return
        ring.ended = true
        if (k.stdout.ended && k.stderr.ended && c.kept.includes(k)) this.#ended.add(k)
        this.#wakeUp(owner)
      }
      teeAtPush(stream, chunk, end)
    }
    this.#wakeUp(owner)
  }

  /** A page of `owner`'s output; undefined when that incarnation is not kept (never was, or dropped). */
  read(owner: object | undefined, options: OutputReadOptions = {}): OutputPage | undefined {
    const o = validateRead(options) // first: bad options throw even for an unknown child
    const c = owner && this.#children.get(owner)
    const k = o.incarnation === undefined ? c?.kept.at(-1) : c?.kept.find((x) => x.n === o.incarnation)
    if (!k) return undefined
    return pageOf(k, o.stream, o.offset, o.maxBytes, o.align)
  }

  /** The incarnations of `owner` still kept, oldest first (their numbers). */
  incarnations(owner: object): number[] {
    return this.#children.get(owner)?.kept.map((k) => k.n) ?? []
  }

  /**
   * Every page `owner` writes from now on (or from `fromStart`: from the oldest byte kept), both
   * streams, across incarnations, in order per stream; a slow reader gets `skipped` for what the
   * rings dropped meanwhile, never an unbounded queue. Ends when `signal` aborts or `done()` says
   * so once everything kept has been read.
   */
  async *follow(owner: object, options: { signal: AbortSignal; fromStart?: boolean; align?: Align; done: () => boolean }): AsyncGenerator<OutputPage> {
    const { signal, done } = options
    const align = options.align ?? 'bytes'
    /** Next offset per incarnation and stream: where this follower has read to. */
    const next = new Map<string, number>()
    const c0 = this.#children.get(owner)
    if (!options.fromStart) for (const k of c0?.kept ?? []) for (const s of ['stdout', 'stderr'] as const) next.set(`${k.n}:${s}`, k[s].total)
    let woken = true
    let resolve: (() => void) | undefined
    const wake = (): void => {
      woken = true
      resolve?.()
    }
    const aborted = (): void => resolve?.()
    let followers = this.#followers.get(owner)
    if (!followers) this.#followers.set(owner, (followers = new Set()))
    followers.add(wake)
    signal.addEventListener('abort', aborted, { once: true })
    try {
      while (!signal.aborted) {
        if (woken) {
          woken = false
          for (const k of this.#children.get(owner)?.kept ?? []) {
            for (const s of ['stdout', 'stderr'] as const) {
              const key = `${k.n}:${s}`
              for (;;) {
                const page = pageOf(k, s, next.get(key) ?? 0, 64 * 1024, align)
                if (page.nextOffset === (next.get(key) ?? 0) && page.skipped === 0) break
                next.set(key, page.nextOffset)
                if (page.data.length > 0 || page.skipped > 0) yield page
                if (signal.aborted) return
              }
            }
          }
          continue // something may have been written while we yielded
        }
        if (done()) return
        await new Promise<void>((r) => {
          resolve = r
          if (woken || signal.aborted) r()
        })
        resolve = undefined
      }
    } finally {
      followers.delete(wake)
      if (followers.size === 0 && this.#followers.get(owner) === followers) this.#followers.delete(owner)
      signal.removeEventListener('abort', aborted)
    }
  }

  /** Every kept incarnation of `owner` has both its streams ended (nothing more will be written there). */
  ended(owner: object): boolean {
    return (this.#children.get(owner)?.kept ?? []).every((k) => k.stdout.ended && k.stderr.ended)
  }

  /** Wakes every follower (a status changed, which is rare: each checks whether its child is over). */
  pokeAll(): void {
    for (const followers of this.#followers.values()) for (const wake of followers) wake()
  }

  #wakeUp(owner: object): void {
    const followers = this.#followers.get(owner)
    if (followers) for (const wake of followers) wake()
  }

  #write(k: Kept, ring: StreamRing, buf: Buffer): void {
    if (!k.child.kept.includes(k)) return ring.write(buf) // dropped by a bound: only counted
    const want = ring.wants(buf.length, this.perChildBytes)
    const capacity = want > ring.capacity ? this.#fit(k, ring, want) : ring.capacity
    this.#charge(k.child, capacity - ring.capacity)
    ring.resize(capacity)
    ring.write(buf)
  }

  /**
   * The capacity `ring` of `k` may grow to, toward `want`, within both bounds (maybe less than it
   * has). Past the child's bound, its other stream gives back what it holds beyond half the bound,
   * so a flood on stdout never leaves stderr's last words no room.
   */
  #fit(k: Kept, ring: StreamRing, want: number): number {
    const have = ring.capacity
    this.#makeRoom(k.child, want - have, k, want - have)
    const other = ring === k.stdout ? k.stderr : k.stdout
    const short = k.child.used + want - have - this.perChildBytes
    const half = Math.floor(this.perChildBytes / 2)
    if (short > 0 && other.capacity > half) {
      const keep = Math.max(half, other.capacity - short)
      this.#charge(k.child, keep - other.capacity)
      other.resize(keep)
    }
    const room = Math.min(this.perChildBytes - k.child.used, this.totalBytes - this.#used)
    return room >= want - have ? want : Math.max(0, have + room)
  }

  /**
   * Room for `n` more ring bytes in child `c` and `total` more in all: ended incarnations go, the
   * child's own first, then anyone's (never `except`).
   */
  #makeRoom(c: ChildOutput, n: number, except: Kept, total: number): void {
    for (const k of [...c.kept]) {
      if (c.used + n <= this.perChildBytes) break
      if (k !== except && this.#ended.has(k)) this.#drop(k)
    }
    for (const k of this.#ended) {
      if (this.#used + total <= this.totalBytes) break
      if (k !== except) this.#drop(k)
    }
  }

  #drop(k: Kept): void {
    const c = k.child
    c.kept.splice(c.kept.indexOf(k), 1)
    this.#ended.delete(k)
    this.#charge(c, -(k.stdout.capacity + k.stderr.capacity))
    this.#used -= INCARNATION_OVERHEAD
    k.stdout.resize(0)
    k.stderr.resize(0)
  }

  #charge(c: ChildOutput, n: number): void {
    c.used += n
    this.#used += n
  }
}

function pageOf(k: Kept, stream: OutputStream, offset: number, maxBytes: number, align: Align): OutputPage {
  const ring = k[stream]
  return { incarnation: k.n, pid: k.pid, stream, ...ring.read(offset, maxBytes, align), ended: ring.ended }
}

const noop = (): void => {}

/**
 * Gives `onChunk` every chunk `stream` is pushed (what its pipe delivered), as it arrives, and calls
 * `onEnd` at its end (or close), without making it flow (see the top of this file). When nobody
 * reads it and its buffer is full (push() returned false) and the caller never paused it
 * (readableFlowing still null), it is let flow: else its pipe is no longer read and the child
 * blocks on its next write.
 */
function teeAtPush(stream: Readable, onChunk: ((buf: Buffer) => void) | null, onEnd: () => void): void {
  const push = stream.push
  stream.push = function teedPush(this: Readable, chunk: unknown, encoding?: BufferEncoding): boolean {
    if (chunk === null) onEnd()
    else if (onChunk) onChunk(asBuffer(chunk, encoding))
    const more = push.call(this, chunk, encoding)
    if (!more && chunk !== null && stream.readableFlowing === null) stream.resume()
    return more
  }
  stream.once('close', onEnd)
}

function asBuffer(chunk: unknown, encoding: BufferEncoding | undefined): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk
  if (typeof chunk === 'string') return Buffer.from(chunk, encoding ?? 'utf8')
  const view = chunk as ArrayBufferView
  return Buffer.from(view.buffer, view.byteOffset, view.byteLength)
}

function bytes(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number') throw typeError('ERR_INVALID_ARG_TYPE', `The "${name}" option must be a number. Received ${describe(value)}`)
  if (!Number.isSafeInteger(value) || value < 0) throw rangeError('ERR_OUT_OF_RANGE', `The value of "${name}" is out of range. It must be an integer >= 0. Received ${value}`)
  return value
}

function validateRead(options: OutputReadOptions): Required<Omit<OutputReadOptions, 'incarnation'>> & { incarnation: number | undefined } {
  const o = validateOptions(options)
  const stream = o.stream ?? 'stdout'
  if (stream !== 'stdout' && stream !== 'stderr') throw typeError('ERR_INVALID_ARG_VALUE', `The "stream" option must be 'stdout' or 'stderr'. Received ${describe(stream)}`)
  const align = o.align ?? 'bytes'
  if (align !== 'bytes' && align !== 'utf8' && align !== 'lines') throw typeError('ERR_INVALID_ARG_VALUE', `The "align" option must be 'bytes', 'utf8' or 'lines'. Received ${describe(align)}`)
  const int = (v: unknown, name: string, min: number, max: number): number | undefined => {
    if (v === undefined) return undefined
    if (typeof v !== 'number') throw typeError('ERR_INVALID_ARG_TYPE', `The "${name}" option must be a number. Received ${describe(v)}`)
    if (!Number.isSafeInteger(v) || v < min || v > max) throw rangeError('ERR_OUT_OF_RANGE', `The value of "${name}" is out of range. It must be an integer from ${min} to ${max}. Received ${v}`)
    return v
  }
  return {
    stream,
    align,
    incarnation: int(o.incarnation, 'incarnation', 0, Number.MAX_SAFE_INTEGER),
    offset: int(o.offset, 'offset', 0, Number.MAX_SAFE_INTEGER) ?? 0,
    maxBytes: int(o.maxBytes, 'maxBytes', 1, MAX_PAGE) ?? 64 * 1024,
  }
}
