// The README's core API from CommonJS (the package's "require" types), as a user writes it.
import reapkit = require('reapkit')
import mcp = require('reapkit/mcp')

const child = reapkit.spawn('x', [], { stdio: 'ignore' })
const caps = reapkit.capabilities()
reapkit.kill(child.pid ?? 0, 'SIGTERM')
const pgid: number = reapkit.getpgid()
const transport = new mcp.StdioClientTransport({ command: 'node', args: ['server.js'] })
reapkit.exec('ls', { group: true }, (_err, stdout: string) => void stdout)
reapkit.fork('worker.js').send('hi')
void [caps, pgid, transport]

// @ts-expect-error: a stdio value Node does not know (the options are Node's, not `any`)
reapkit.spawn('x', [], { stdio: 'nonsense' })
