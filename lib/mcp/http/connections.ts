/** The server's open connections, to count what the close closes (server.getConnections() answers only by callback). */
import type { Server } from 'node:http'
import type { Socket } from 'node:net'

export class Connections {
  readonly #open = new Set<Socket>()

  constructor(server: Server) {
    const open = this.#open
    // One listener for the server and one shared 'close' listener for every socket: no closure per connection.
    const onClose = function (this: Socket): void {
      open.delete(this)
    }
    server.on('connection', (socket: Socket) => {
      open.add(socket)
      socket.once('close', onClose)
    })
  }

  /** Connections not yet destroyed. */
  live(): number {
    let n = 0
    for (const socket of this.#open) if (!socket.destroyed) n++
    return n
  }
}
