/** The probe server (`probePort`): the readiness and liveness paths on a port that keeps accepting during the drain. */
import { createServer, type Server } from 'node:http'
import { probeAnswer } from './answers'
import type { HttpDrain } from './context'

export function startProbeServer(drain: HttpDrain, port: number, host: string | undefined): Server {
  const probeServer = createServer((req, res) => {
    if (!probeAnswer(drain, req, res)) res.writeHead(404, { 'content-length': 0 }).end()
  })
  // No probe answers: the orchestrator's probes fail, and it restarts the server. Said at once.
  probeServer.on('error', (err) => process.emitWarning(`withHttpKeepalive: the probe server failed: ${err.message}`, { code: 'REAPKIT_PROBE_SERVER' }))
  probeServer.listen(port, host)
  probeServer.unref() // it never keeps the process alive by itself
  return probeServer
}
