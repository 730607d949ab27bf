// The HTTP front's sessions: one McpServer and transport each, owned by the token that opened it;
// ended by DELETE, by the idle timeout (no request and no open stream: the client may be gone), by
// the drain. A session that ends stops its processes (tools.endSession).
import { randomUUID } from 'node:crypto'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'

/** `newServer()` makes one McpServer (tools registered) per session. */
export function createSessions({ newServer, tools, sessionIdleMs }) {
  /** Open sessions by id: { id, tokenId, transport, server, active, timer, ended }. */
  const sessions = new Map()

  const end = (entry) => {
    if (entry.ended) return
    entry.ended = true
    clearTimeout(entry.timer)
    if (entry.id === null) return
    sessions.delete(entry.id)
    void tools.endSession(entry.id) // its processes stop with it
  }

  return {
    /** The open sessions, by id (the drain closes their transports). */
    byId: sessions,

    /** `tokenId`'s session `id`: null when unknown or another token's (the same answer: 404). */
    find(id, tokenId) {
      const entry = sessions.get(id) ?? null
      return entry !== null && entry.tokenId === tokenId ? entry : null
    },

    /** A new session for `tokenId` (it has an id once the SDK has initialized it). */
    async open(tokenId) {
      const entry = { id: null, tokenId, transport: null, server: null, active: 0, timer: undefined, ended: false }
      entry.transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          entry.id = id
          sessions.set(id, entry)
        },
      })
      entry.transport.onclose = () => end(entry) // DELETE, server.close(), the drain's close
      entry.server = newServer()
      await entry.server.connect(entry.transport)
      return entry
    },

    /** An exchange of the session begins: it is not idle until the last one ends (a GET stream included). */
    begin(entry, res) {
      entry.active++
      clearTimeout(entry.timer)
      res.once('close', () => {
        entry.active--
        if (entry.id === null) {
          if (!entry.ended && entry.active === 0) void entry.server.close() // an initialize that made no session
          return
        }
        if (entry.active === 0 && !entry.ended) {
          // Closing the server closes the transport, which ends the session (by its onclose) and aborts its calls.
          entry.timer = setTimeout(() => void entry.server.close(), sessionIdleMs)
          entry.timer.unref()
        }
      })
    },
  }
}
