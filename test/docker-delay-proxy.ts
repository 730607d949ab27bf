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
    client.on('data', (chunk) => {
      const held = CREATE.test(chunk.toString('latin1'))
      if (held) sent()
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
