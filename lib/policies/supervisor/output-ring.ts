/**
 * One output stream's newest bytes, in a ring that grows by doubling (a flood of 1-byte chunks
 * costs what their bytes do, a silent stream nothing), and a page of it read by byte offset: the
 * exact bytes, or with its bounds moved off the middle of a UTF-8 character or of a line.
 *
 * Offsets are positions in everything the stream ever wrote (`total`), so a reader that keeps its
 * `nextOffset` sees exactly what it missed when the ring dropped bytes (`skipped`).
 * (The example server's history, examples/process-server/output.mjs, was the first of these; it
 * now reads the Supervisor's.)
 */

/** A ring's first allocation: small writes start small, and double from there. */
const MIN_RING = 64
const EMPTY = Buffer.alloc(0)

export type Align = 'bytes' | 'utf8' | 'lines'

/** A page of one stream: `data` from stream offset `offset` up to `nextOffset`. */
export interface RingPage {
  /** Where `data` starts (past `offset` when bytes were dropped, or moved to a character or line start). */
  offset: number
  /** Bytes between the offset asked for and `offset` that are no longer kept (or were skipped to align). */
  skipped: number
  /** Where to read on from. */
  nextOffset: number
  /** Every byte the stream wrote so far. */
  total: number
  data: Buffer
}

export class StreamRing {
  ring: Buffer = EMPTY
  /** Ring index of the oldest byte kept. */
  head = 0
  size = 0
  total = 0
  /** The stream ended (its pipe closed): no byte will follow. */
  ended = false
  /**
   * The byte just before `start` (the newest one dropped), -1 when none was: 'lines' needs it to
   * tell whether the oldest byte kept starts a line (the ring itself no longer holds it).
   */
  beforeStart = -1

  /** The stream offset of the oldest byte kept. */
  get start(): number {
    return this.total - this.size
  }

  get capacity(): number {
    return this.ring.length
  }

  /** The capacity `n` more bytes want: doubled from the current one, at most `cap`. */
  wants(n: number, cap: number): number {
    const have = this.ring.length
    if (this.size + n <= have) return have
    return Math.min(cap, Math.max(MIN_RING, 2 * have, nextPow2(this.size + n)))
  }

  /** Appends `buf`, keeping the newest `capacity` bytes of the stream. */
  write(buf: Buffer): void {
    if (buf.length === 0) return
    this.total += buf.length
    const cap = this.ring.length
    if (cap === 0) return void (this.beforeStart = buf[buf.length - 1]!)
    if (buf.length >= cap) {
      this.beforeStart = buf.length > cap ? buf[buf.length - cap - 1]! : this.size > 0 ? this.ring[(this.head + this.size - 1) % cap]! : this.beforeStart
      buf.copy(this.ring, 0, buf.length - cap)
      this.head = 0
      this.size = cap
      return
    }
    const over = this.size + buf.length - cap
    if (over > 0) this.beforeStart = this.ring[(this.head + over - 1) % cap]! // read before the copy overwrites it
    const tail = (this.head + this.size) % cap
    const first = buf.copy(this.ring, tail)
    if (first < buf.length) buf.copy(this.ring, 0, first)
    if (over > 0) this.head = (this.head + over) % cap
    this.size = Math.min(cap, this.size + buf.length)
  }

  /** Moves the newest bytes into a ring of `capacity` (larger to grow, smaller to give memory back). */
  resize(capacity: number): void {
    if (capacity === this.ring.length) return
    const keep = Math.min(this.size, capacity)
    if (keep < this.size) this.beforeStart = this.byteAt(this.total - keep - 1)
    const ring = capacity === 0 ? EMPTY : Buffer.alloc(capacity)
    this.copyOut(this.total - keep, keep, ring)
    this.ring = ring
    this.head = 0
    this.size = keep
  }

  /** Copies `n` kept bytes from stream offset `from` (at most two copies: the ring wraps). */
  copyOut(from: number, n: number, target: Buffer = Buffer.allocUnsafe(n)): Buffer {
    if (n === 0) return target
    const cap = this.ring.length
    const at = (this.head + (from - this.start)) % cap
    const first = Math.min(n, cap - at)
    this.ring.copy(target, 0, at, at + first)
    if (first < n) this.ring.copy(target, first, 0, n - first)
    return target
  }

  byteAt(pos: number): number {
    return this.ring[(this.head + (pos - this.start)) % this.ring.length]!
  }

  /** A page from `offset`, at most `maxBytes`, aligned as asked. */
  read(offset: number, maxBytes: number, align: Align): RingPage {
    let from = Math.max(offset, this.start)
    let to = Math.max(from, Math.min(this.total, from + maxBytes)) // an offset past the end reads nothing
    if (align === 'utf8') [from, to] = utf8Bounds(this, from, to)
    else if (align === 'lines') [from, to] = lineBounds(this, from, to, from > offset)
    return { offset: from, skipped: from - offset, nextOffset: to, total: this.total, data: this.copyOut(from, to - from) }
  }
}

const NL = 0x0a
const isContinuation = (b: number): boolean => (b & 0xc0) === 0x80
/** The length of the UTF-8 sequence a lead byte starts (1 for anything that is not a lead byte). */
const sequenceLength = (b: number): number => (b >= 0xf0 && b <= 0xf4 ? 4 : b >= 0xe0 ? (b <= 0xef ? 3 : 1) : b >= 0xc2 ? 2 : 1)

/**
 * [from, to) with its bounds moved off the middle of a UTF-8 character: a start inside one moves
 * past it, an end inside one moves before it (or past it, when that character is all the page
 * would hold, so that a reader always makes progress). A character still incomplete at the end of
 * an open stream is left for a later read; in an ended one it is sent.
 */
function utf8Bounds(t: StreamRing, from: number, to: number): [number, number] {
  if (from < t.total && isContinuation(t.byteAt(from))) {
    const p = leadBefore(t, from, t.start)
    if (p >= 0 && p + sequenceLength(t.byteAt(p)) > from) from = Math.min(t.total, p + sequenceLength(t.byteAt(p)))
    // Its lead byte was dropped from the ring: the rest of that character goes too.
    else if (p < 0 && t.start > 0 && from - t.start < 3) while (from < t.total && isContinuation(t.byteAt(from))) from++
    to = Math.max(from, to)
  }
  const p = leadBefore(t, to, from)
  if (p < 0) return [from, to]
  const charEnd = p + sequenceLength(t.byteAt(p))
  if (charEnd <= to) return [from, to]
  if (charEnd <= t.total) return [from, p > from ? p : charEnd]
  return [from, t.ended ? to : p]
}

/** The lead byte of the character holding the byte before `pos` (looking no further back than `floor`), or -1. */
function leadBefore(t: StreamRing, pos: number, floor: number): number {
  for (let p = pos - 1; p >= Math.max(floor, pos - 4); p--) {
    if (!isContinuation(t.byteAt(p))) return p
  }
  return -1
}

/**
 * [from, to) in whole lines: a start the ring cut mid-line moves past that line's end; the end moves
 * back to the last newline. A page whose first line is longer than the page ends at the page's
 * length (a reader always makes progress), and an ended stream's last line needs no newline.
 */
function lineBounds(t: StreamRing, from: number, to: number, cut: boolean): [number, number] {
  if (cut && from > 0 && from < t.total && (from === t.start ? t.beforeStart : t.byteAt(from - 1)) !== NL) {
    let p = from
    while (p < t.total && t.byteAt(p) !== NL) p++
    if (p < t.total) from = p + 1
    to = Math.max(from, to)
  }
  if (to === t.total && t.ended) return [from, to]
  for (let p = to; p > from; p--) if (t.byteAt(p - 1) === NL) return [from, p]
  // No newline within the page: a full page of one long line goes as it is; a partial line waits.
  return [from, to - from >= 1 && to < t.total ? to : from]
}

const nextPow2 = (n: number): number => 2 ** Math.ceil(Math.log2(Math.max(1, n)))
