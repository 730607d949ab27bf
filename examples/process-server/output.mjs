// The process server's output history: each process's stdout and stderr kept in a bounded buffer
// (the newest --output-bytes of each stream), readable while it runs and after it ended, until the
// total budget (--output-total-bytes) needs the room: then the histories of ended processes go,
// oldest first, and if that is not enough the stream being written drops its own oldest bytes.
// Reads are by byte offset into the stream as the process wrote it, so a client can page through
// it and see what was dropped before what it gets.

/** One stream's newest bytes: `start` is the stream offset of the first one kept, `total` all it wrote. */
class StreamTail {
  chunks = []
  size = 0
  total = 0

  get start() {
    return this.total - this.size
  }

  write(buf, cap) {
    this.chunks.push(buf)
    this.size += buf.length
    this.total += buf.length
    return buf.length - this.trim(cap)
  }

  /** Drops the oldest bytes down to `keep`; how many were dropped. */
  trim(keep) {
    let excess = this.size - keep
    const dropped = Math.max(0, excess)
    while (excess > 0) {
      const first = this.chunks[0]
      if (first.length <= excess) {
        this.chunks.shift()
        excess -= first.length
      } else {
        this.chunks[0] = first.subarray(excess)
        excess = 0
      }
    }
    this.size -= dropped
    return dropped
  }

  read(offset, maxBytes) {
    const from = Math.max(offset, this.start)
    const all = Buffer.concat(this.chunks)
    const data = all.subarray(from - this.start, Math.min(all.length, from - this.start + maxBytes))
    return { offset: from, skipped: from - offset, data: data.toString('utf8'), nextOffset: from + data.length, total: this.total }
  }
}

export function createOutputHistory({ perProcessBytes, totalBytes }) {
  /** Histories in the order their processes started: { owner, pid, requestId, tags, startedAt, exitedAt, exitCode, signal, stdout, stderr }. */
  const entries = new Set()
  let used = 0

  /** Room for `n` more bytes: ended histories go first, oldest first. */
  const makeRoom = (n) => {
    for (const e of entries) {
      if (used + n <= totalBytes) return
      if (e.exitedAt === null) continue
      entries.delete(e)
      used -= e.stdout.size + e.stderr.size
    }
  }

  return {
    /** A process started: its history, to write to and end. */
    start({ owner, pid, requestId }) {
      const e = { owner, pid, requestId, startedAt: Date.now(), exitedAt: null, exitCode: null, signal: null, stdout: new StreamTail(), stderr: new StreamTail() }
      entries.add(e)
      return {
        write(stream, chunk) {
          if (!entries.has(e)) return
          const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, 'utf8')
          makeRoom(buf.length)
          used += e[stream].write(buf, perProcessBytes)
          // Still over (everything else still runs): this stream gives up its own oldest bytes.
          if (used > totalBytes) used -= e[stream].trim(Math.max(0, e[stream].size - (used - totalBytes)))
        },
        end(exitCode, signal) {
          Object.assign(e, { exitedAt: Date.now(), exitCode, signal })
        },
      }
    },

    /** The newest history of `owner` for a pid or a client request id, or undefined. */
    find(owner, { pid, requestId }) {
      let found
      for (const e of entries) {
        if (e.owner !== owner) continue
        if (pid !== undefined ? e.pid === pid : e.requestId === requestId) found = e
      }
      return found
    },

    /** What get_output answers for one history. */
    read(e, { stream, offset, maxBytes }) {
      const ended = e.exitedAt !== null
      return {
        pid: e.pid,
        requestId: e.requestId,
        running: !ended,
        exitCode: e.exitCode,
        signal: e.signal,
        durationMs: (e.exitedAt ?? Date.now()) - e.startedAt,
        stream,
        ...e[stream].read(offset, maxBytes),
      }
    },

    /** Forgets an owner's histories (its session ended: nobody can ask for them any more). */
    forget(owner) {
      for (const e of entries) {
        if (e.owner !== owner) continue
        entries.delete(e)
        used -= e.stdout.size + e.stderr.size
      }
    },

    get usedBytes() {
      return used
    },
  }
}
