// The process server's output history: each process's stdout and stderr kept in a bounded buffer
// (the newest --output-bytes of each stream), readable while it runs and after it ended, until the
// total budget (--output-total-bytes) needs the room: then the histories of ended processes go,
// the earliest ended first, and if that is not enough the stream being written keeps fewer of its
// own newest bytes.
//
// The budget counts memory, not payload: each stream is one ring buffer (grown by doubling up to
// the per-stream cap, so a flood of 1-byte chunks costs what their bytes do), and each history is
// charged a fixed overhead for its bookkeeping, so that silent processes cannot pile up either.
// The number of ended histories kept is capped as well.
//
// The bytes are kept as the process wrote them. Reads are by byte offset into the stream, so a
// client can page through it and see what was dropped before what it gets; a page comes back as
// base64 (exact bytes) or as UTF-8 text whose bounds are moved so that it never splits a character.

/**
 * What one history costs beyond its ring bytes (its objects, index entries and its rings' buffer
 * objects): measured at about 800 bytes silent and 1200 with both streams written, so a safe side.
 */
export const HISTORY_OVERHEAD = 1536
/** A ring's first allocation: small writes start small, and double from there. */
const MIN_RING = 64
/** Every stream's ring before its first byte (most processes write to one stream only, or none). */
const EMPTY = Buffer.alloc(0)

/** One stream's newest bytes, in a ring: `start` is the stream offset of the first one kept, `total` all it wrote. */
class StreamTail {
  ring = EMPTY
  /** Ring index of the oldest byte kept. */
  head = 0
  size = 0
  total = 0

  get start() {
    return this.total - this.size
  }

  get capacity() {
    return this.ring.length
  }

  /** Appends `buf`, keeping the newest `capacity` bytes of the stream. */
  write(buf) {
    this.total += buf.length
    const cap = this.ring.length
    if (cap === 0) return
    if (buf.length >= cap) {
      buf.copy(this.ring, 0, buf.length - cap)
      this.head = 0
      this.size = cap
      return
    }
    const tail = (this.head + this.size) % cap
    const first = buf.copy(this.ring, tail)
    if (first < buf.length) buf.copy(this.ring, 0, first)
    const over = this.size + buf.length - cap
    if (over > 0) this.head = (this.head + over) % cap
    this.size = Math.min(cap, this.size + buf.length)
  }

  /** Moves the newest bytes into a ring of `capacity` (larger to grow, smaller to give memory back). */
  resize(capacity) {
    if (capacity === this.ring.length) return
    const keep = Math.min(this.size, capacity)
    const ring = Buffer.alloc(capacity)
    this.copyOut(this.total - keep, keep, ring)
    this.ring = ring
    this.head = 0
    this.size = keep
  }

  /** Copies `n` kept bytes from stream offset `from` into `target` (at most two copies: the ring wraps). */
  copyOut(from, n, target = Buffer.allocUnsafe(n)) {
    const cap = this.ring.length
    if (n === 0) return target
    const at = (this.head + (from - this.start)) % cap
    const first = Math.min(n, cap - at)
    this.ring.copy(target, 0, at, at + first)
    if (first < n) this.ring.copy(target, first, 0, n - first)
    return target
  }

  byteAt(pos) {
    return this.ring[(this.head + (pos - this.start)) % this.ring.length]
  }
}

const isContinuation = (b) => (b & 0xc0) === 0x80
/** The length of the UTF-8 sequence a lead byte starts (1 for anything that is not a lead byte). */
const sequenceLength = (b) => (b >= 0xf0 && b <= 0xf4 ? 4 : b >= 0xe0 ? (b <= 0xef ? 3 : 1) : b >= 0xc2 ? 2 : 1)

/**
 * The page [from, to) of a stream with its bounds moved off the middle of a UTF-8 character: a
 * start inside one moves past it, an end inside one moves before it (or past it, when that
 * character is all the page would hold, so that a reader always makes progress). A character still
 * incomplete at the end of a running stream is left for a later read; in an ended one it is sent.
 */
function utf8Bounds(t, from, to, running) {
  if (from < t.total && isContinuation(t.byteAt(from))) {
    const p = leadBefore(t, from, t.start)
    if (p >= 0 && p + sequenceLength(t.byteAt(p)) > from) from = Math.min(t.total, p + sequenceLength(t.byteAt(p)))
    // Its lead byte was dropped from the history: the rest of that character goes too.
    else if (p < 0 && t.start > 0 && from - t.start < 3) while (from < t.total && isContinuation(t.byteAt(from))) from++
    to = Math.max(from, to)
  }
  const p = leadBefore(t, to, from)
  if (p < 0) return [from, to]
  const charEnd = p + sequenceLength(t.byteAt(p))
  if (charEnd <= to) return [from, to]
  if (charEnd <= t.total) return [from, p > from ? p : charEnd]
  return [from, running ? p : to]
}

/** The lead byte of the character holding the byte before `pos` (looking no further back than `floor`), or -1. */
function leadBefore(t, pos, floor) {
  for (let p = pos - 1; p >= Math.max(floor, pos - 4); p--) {
    if (!isContinuation(t.byteAt(p))) return p
  }
  return -1
}

/** A page of a stream: `encoding` 'base64' gives the exact bytes, 'utf8' whole characters. */
function readPage(t, { offset, maxBytes, encoding, running }) {
  let from = Math.max(offset, t.start)
  let to = Math.max(from, Math.min(t.total, from + maxBytes)) // an offset past the end reads nothing
  if (encoding === 'utf8') [from, to] = utf8Bounds(t, from, to, running)
  const bytes = t.copyOut(from, to - from)
  return { offset: from, skipped: from - offset, encoding, data: bytes.toString(encoding), nextOffset: to, total: t.total }
}

/** Histories by owner and by pid or request id: each key's list, oldest first. */
function createIndex() {
  const byOwner = new Map()
  const listOf = (owner, kind, key, create) => {
    let maps = byOwner.get(owner)
    if (!maps) {
      if (!create) return undefined
      byOwner.set(owner, (maps = { pid: new Map(), requestId: new Map() }))
    }
    let list = maps[kind].get(key)
    if (!list && create) maps[kind].set(key, (list = []))
    return list
  }
  const drop = (owner, kind, key, e) => {
    const maps = byOwner.get(owner)
    const list = maps?.[kind].get(key)
    if (!list) return
    list.splice(list.indexOf(e), 1)
    if (list.length === 0) maps[kind].delete(key)
    if (maps.pid.size === 0 && maps.requestId.size === 0) byOwner.delete(owner)
  }
  return {
    add(e) {
      listOf(e.owner, 'pid', e.pid, true).push(e)
      listOf(e.owner, 'requestId', e.requestId, true).push(e)
    },
    remove(e) {
      drop(e.owner, 'pid', e.pid, e)
      drop(e.owner, 'requestId', e.requestId, e)
    },
    newest(owner, kind, key) {
      return listOf(owner, kind, key, false)?.at(-1)
    },
  }
}

/**
 * `perProcessBytes`: the newest bytes kept of each stream; `totalBytes`: the memory all histories
 * may hold; `maxEnded`: how many ended processes' histories are kept at most.
 */
export function createOutputHistory({ perProcessBytes, totalBytes, maxEnded = 10_000 }) {
  /** Every history kept (running or ended); `ended` holds the ended ones, the earliest ended first. */
  const entries = new Set()
  const ended = new Set()
  const index = createIndex()
  let used = 0

  const remove = (e) => {
    entries.delete(e)
    ended.delete(e)
    index.remove(e)
    used -= HISTORY_OVERHEAD + e.stdout.capacity + e.stderr.capacity
  }
  /** Room for `n` more bytes: ended histories go, the earliest ended first (never `except`). */
  const makeRoom = (n, except) => {
    for (const e of ended) {
      if (used + n <= totalBytes) return
      if (e !== except) remove(e)
    }
  }
  /** The capacity `t` gets for `n` more bytes: doubled up to the cap, within what the budget leaves. */
  const fit = (e, t, n) => {
    const cap = t.capacity
    const want = t.size + n <= cap ? cap : Math.min(perProcessBytes, Math.max(MIN_RING, 2 * cap, nextPow2(t.size + n)))
    if (want > cap) makeRoom(want - cap, e)
    const room = totalBytes - used
    if (room >= want - cap) return want
    // Still over (everything else still runs): this stream grows into what is left, or gives back
    // what is over, keeping fewer of its own newest bytes.
    return Math.max(0, cap + room)
  }

  return {
    /** A process started: its history, to write to and end. */
    start({ owner, pid, requestId }) {
      const e = { owner, pid, requestId, startedAt: Date.now(), exitedAt: null, exitCode: null, signal: null, stdout: new StreamTail(), stderr: new StreamTail() }
      makeRoom(HISTORY_OVERHEAD)
      entries.add(e)
      index.add(e)
      used += HISTORY_OVERHEAD
      return {
        write(stream, chunk) {
          if (!entries.has(e)) return // dropped (its session ended, or the budget needed it)
          const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, 'utf8')
          const t = e[stream]
          const capacity = fit(e, t, buf.length)
          used += capacity - t.capacity
          t.resize(capacity)
          t.write(buf)
        },
        end(exitCode, signal) {
          if (!entries.has(e) || e.exitedAt !== null) return
          Object.assign(e, { exitedAt: Date.now(), exitCode, signal })
          ended.add(e)
          if (ended.size > maxEnded) remove(ended.values().next().value)
        },
      }
    },

    /** The newest history of `owner` for a pid or a client request id, or undefined. */
    find(owner, { pid, requestId }) {
      return pid !== undefined ? index.newest(owner, 'pid', pid) : index.newest(owner, 'requestId', requestId)
    },

    /** What get_output answers for one history: `encoding` 'utf8' (default) or 'base64'. */
    read(e, { stream, offset, maxBytes, encoding = 'utf8' }) {
      return {
        pid: e.pid,
        requestId: e.requestId,
        running: e.exitedAt === null,
        exitCode: e.exitCode,
        signal: e.signal,
        durationMs: (e.exitedAt ?? Date.now()) - e.startedAt,
        stream,
        ...readPage(e[stream], { offset, maxBytes, encoding, running: e.exitedAt === null }),
      }
    },

    /** Forgets an owner's histories (its session ended: nobody can ask for them any more). */
    forget(owner) {
      for (const e of entries) if (e.owner === owner) remove(e)
    },

    /** The memory charged to the budget: ring buffers plus each history's overhead. */
    get usedBytes() {
      return used
    },

    /** How many histories are kept, running and ended. */
    get count() {
      return entries.size
    },
  }
}

const nextPow2 = (n) => 2 ** Math.ceil(Math.log2(Math.max(1, n)))
