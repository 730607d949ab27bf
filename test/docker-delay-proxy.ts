// A byte-for-byte proxy in front of the test dockerd's socket that holds back a container's create
// request for a while: the way to catch, every time, the race where a `docker run` client dies after
// asking for its container and the daemon creates it afterwards (network latency, a busy daemon).
// Everything else passes at once; the daemon and the client are the real ones.
import { mkdtempSync, rmSync } from 'node:fs'
import { createConnection, createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface DelayProxy {
  /** A DOCKER_HOST for clients that go through the proxy. */
  host: string
  /** Resolves when a client has sent a create request (held back from now on). */
  createSent: Promise<void>
  /** Resolves when the daemon has answered the held create (the container exists). */
  createAnswered: Promise<void>
  close(): Promise<void>
}

const CREATE = /^POST \S*\/containers\/create/m

interface BodyCount {
  /** Counts a chunk of the request (latin1 text, the first with the headers); true once the body is whole. */
  add(text: string): boolean
}

/** The body of a request whose first chunk is `first`: by its Content-Length, or to a chunked body's last chunk. */
function bodyCount(first: string): BodyCount {
  const headerEnd = first.indexOf('\r\n\r\n')
  if (headerEnd < 0) return { add: () => true } // (headers split across chunks: counted as sent, as before)
  const length = /^content-length:\s*(\d+)/im.exec(first.slice(0, headerEnd))
  let left = length ? Number(length[1]) : Infinity
  let isFirst = true
  return {
    add(text) {
      const body = isFirst ? text.slice(headerEnd + 4) : text
      isFirst = false
      if (!length) return body.endsWith('0\r\n\r\n')
      left -= body.length
      return left <= 0
    },
  }
}

/** Listens on a fresh socket and forwards to `dockerHost` (unix://...), holding a create `holdMs`. */
export async function delayingProxy(dockerHost: string, holdMs: number): Promise<DelayProxy> {
  const upstreamPath = dockerHost.replace(/^unix:\/\//, '')
  const dir = mkdtempSync(join(tmpdir(), 'reapkit-proxy-'))
  const path = join(dir, 'docker.sock')
  const sockets = new Set<Socket>()
  let sent!: () => void
  let answered!: () => void
  const createSent = new Promise<void>((resolve) => (sent = resolve))
  const createAnswered = new Promise<void>((resolve) => (answered = resolve))
  const server = createServer((client) => {
    const upstream = createConnection(upstreamPath)
    sockets.add(client).add(upstream)
    let queue = Promise.resolve()
    let awaitingAnswer = false
    let createBody: BodyCount | null = null
    client.on('data', (chunk) => {
      const text = chunk.toString('latin1')
      const held = CREATE.test(text)
      if (held) createBody = bodyCount(text)
      // Sent once the whole request is here: a client killed between its headers and its body leaves
      // a create the daemon never answers, and nothing for the race this proxy is for.
      if (createBody && createBody.add(text)) {
        createBody = null
        sent()
      }
      // the client may be gone by then: the upstream connection stays open, as the daemon's request does
      queue = queue
        .then(() => (held ? new Promise<void>((resolve) => setTimeout(resolve, holdMs)) : undefined))
        .then(() => {
          if (held) awaitingAnswer = true
          upstream.write(chunk)
        })
    })
    upstream.on('data', (chunk) => {
      if (awaitingAnswer) {
        awaitingAnswer = false
        answered()
      }
      if (!client.destroyed) client.write(chunk)
    })
    upstream.on('end', () => client.end())
    upstream.on('error', () => client.destroy())
    client.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(path, resolve))
  return {
    host: `unix://${path}`,
    createSent,
    createAnswered,
    async close() {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
