#!/usr/bin/env node
// reapkit-process-server: the example MCP server (examples/process-server/, shipped in the package)
// as a command. Its one dependency beyond reapkit, the MCP SDK 1.x, is an optional peer dependency
// of reapkit: when it is missing this says so, and how to get it, instead of a module-not-found
// stack. `--help` works without it.
import { createRequire } from 'node:module'
import { usage } from '../examples/process-server/usage.mjs'

const args = process.argv.slice(2)
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(usage)
  process.exit(0)
}

// Resolved from the server's own folder, as its imports will be.
const server = new URL('../examples/process-server/server.mjs', import.meta.url)
const resolve = createRequire(server).resolve
const missing = ['@modelcontextprotocol/sdk/server/mcp.js', 'zod'].filter((spec) => {
  try {
    resolve(spec)
    return false
  } catch {
    return true
  }
})
if (missing.length > 0) {
  process.stderr.write(
    'reapkit-process-server: the MCP TypeScript SDK 1.x (@modelcontextprotocol/sdk) is not installed; it is an ' +
      'optional peer dependency of reapkit. Install it beside reapkit (npm install @modelcontextprotocol/sdk), or ' +
      'run npx -y -p reapkit -p @modelcontextprotocol/sdk reapkit-process-server ...\n',
  )
  process.exit(1)
}
await import(server.href)
