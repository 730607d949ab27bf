// The process server's get_output through a real server and real processes: the bytes a process
// wrote (binary or text), paged, as its Supervisor keeps them (the rings themselves:
// test/output-store.test.ts and test/supervisor-output.test.ts).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { run } from './control-lib'
import { ROOT } from './helpers'
import { connectStdioV1 } from './mcp-sdk'

describe('examples/process-server get_output (a real server and real processes)', () => {
  async function connect() {
    const { client } = await connectStdioV1({ command: process.execPath, args: [join(ROOT, 'examples', 'process-server', 'server.mjs'), '--allow-any'] })
    const call = async (name: string, args: Record<string, unknown>) => {
      const r = (await client.callTool({ name, arguments: args }, undefined, { timeout: 30_000 })) as { content: Array<{ text: string }>; isError?: boolean }
      if (r.isError) throw new Error(r.content[0]!.text)
      return JSON.parse(r.content[0]!.text)
    }
    return { client, call }
  }

  it('keeps the bytes a process wrote: binary exact in base64, offsets in bytes, text paged in whole characters', async () => {
    const { client, call } = await connect()
    try {
      // 4 bytes that are not UTF-8, then 'é€😀' four times (36 bytes).
      const run = await call('run_command', { command: 'sh', args: ['-c', "printf '\\200\\201\\377\\376'; for i in 1 2 3 4; do printf 'é€😀'; done"] })
      expect(run.exitCode).toBe(0)
      const expected = Buffer.concat([Buffer.from([0x80, 0x81, 0xff, 0xfe]), Buffer.from('é€😀'.repeat(4), 'utf8')])
      const raw = await call('get_output', { pid: run.pid, encoding: 'base64' })
      expect(raw).toMatchObject({ encoding: 'base64', total: expected.length, nextOffset: expected.length })
      expect(Buffer.from(raw.data, 'base64').equals(expected)).toBe(true)
      // Paged 3 bytes at a time by nextOffset: each page whole characters, together the text.
      let text = ''
      for (let offset = 4, pages = 0; offset < expected.length && pages < 100; pages++) {
        const page = await call('get_output', { pid: run.pid, offset, maxBytes: 3 })
        expect(page.data).not.toContain('\uFFFD')
        expect(page.offset).toBe(offset)
        text += page.data
        offset = page.nextOffset
      }
      expect(text).toBe('é€😀'.repeat(4))
    } finally {
      await client.close().catch(() => {})
    }
  })
})

describe.runIf(process.platform === 'linux')('examples/process-server: output past the old limits, and --control-socket', () => {
  it("run_command's result carries the output kept (not a 4,000-character tail), and says what went before it", async () => {
    const { client } = await connectStdioV1({ command: process.execPath, args: [join(ROOT, 'examples', 'process-server', 'server.mjs'), '--allow-any', '--output-bytes', '20000'] })
    try {
      const call = async (args: Record<string, unknown>) => JSON.parse(((await client.callTool({ name: 'run_command', arguments: args }, undefined, { timeout: 30_000 })) as { content: Array<{ text: string }> }).content[0]!.text)
      const tenK = await call({ command: 'sh', args: ['-c', 'head -c 10000 /dev/zero | tr "\\0" a'] })
      expect(tenK.stdout).toBe('a'.repeat(10_000)) // before: '…' and the last 4,000
      expect(tenK.outputSkipped).toBeUndefined()
      const more = await call({ command: 'sh', args: ['-c', 'head -c 30000 /dev/zero | tr "\\0" b'] })
      expect(more.stdout).toBe('b'.repeat(20_000))
      expect(more.outputSkipped).toEqual({ stdout: 10_000, stderr: 0 })
    } finally {
      await client.close().catch(() => {})
    }
  })

  it('--control-socket: reapkit ps lists what the server runs, logs shows its output, stop ends it (and the call with it)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'reapkit-ps-example-'))
    const socket = join(dir, 'control.sock')
    const { client } = await connectStdioV1({ command: process.execPath, args: [join(ROOT, 'examples', 'process-server', 'server.mjs'), '--allow-any', '--control-socket', socket] })
    try {
      const call = client.callTool({ name: 'run_command', arguments: { command: 'sh', args: ['-c', 'echo started; exec sleep 1000'] } }, undefined, { timeout: 30_000 })
      let snap: { drain: string; processes: Array<{ pid: number; status: string; command: string }> } | undefined
      for (let i = 0; i < 200 && !snap?.processes.some((p) => p.status === 'running'); i++) {
        const r = await run(['ps', '--json', '--socket', socket])
        if (r.code === 0) snap = JSON.parse(r.stdout)
        else await new Promise((res) => setTimeout(res, 50))
      }
      expect(snap?.drain, "the keepalive's state").toBe('running')
      const row = snap!.processes.find((p) => p.status === 'running')!
      expect(row.command).toMatch(/reapkit-supervise --grace 1500 -- sh -c echo started; exec sleep 1000$/)
      let logs = ''
      for (let i = 0; i < 200 && logs !== 'started\n'; i++) logs = (await run(['logs', String(row.pid), '--socket', socket])).stdout
      expect(logs).toBe('started\n')
      expect((await run(['stop', String(row.pid), '--socket', socket])).code).toBe(0)
      const result = JSON.parse(((await call) as { content: Array<{ text: string }> }).content[0]!.text)
      expect(result.pid).toBe(row.pid)
      expect(result.exitCode ?? result.signal).not.toBeNull()
    } finally {
      await client.close().catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
