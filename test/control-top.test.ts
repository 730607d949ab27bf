// `reapkit top`, the live view of a Supervisor's children: under a real pty (script(1), 80x24) it
// redraws in place and fits 80 columns, its screen read back through a small terminal model
// (control-lib.ts); without a terminal it prints plain blocks of lines, with --json one snapshot a
// line. And how the subcommands share the first word with wrapped commands. Every run bounded.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openControlSocket, type ControlSocket, type Supervisor } from '../lib/index'
import { REAPKIT, run, screenOf } from './control-lib'
import { cleanupAfterEach } from './supervisor-cleanup'

const linux = process.platform === 'linux'
const hasScript = linux && existsSync('/usr/bin/script')
const { supervise, tempDir } = cleanupAfterEach()
const sockets: ControlSocket[] = []
afterEach(async () => {
  for (const s of sockets.splice(0)) await s.close()
})

async function withSocket(sup: Supervisor): Promise<string> {
  const ctl = await openControlSocket(sup, { path: join(tempDir('reapkit-top-'), 'control.sock'), drainState: () => 'serving' })
  sockets.push(ctl)
  return ctl.path
}
/** Children with long commands, so that the table must be cut to fit. */
function children(sup: Supervisor): number[] {
  const a = sup.spawn('sh', ['-c', `while :; do :; done # a busy loop with a long command line ${'x'.repeat(80)}`], { requestId: 'busy-with-a-long-request-id' })
  const b = sup.spawn('sleep', ['1000'], { requestId: 'idle' })
  return [a.pid!, b.pid!]
}

describe.runIf(hasScript)('reapkit top on a terminal', () => {
  it('redraws in place on the alternate screen, every line within 80 columns, and leaves the screen as it was', async () => {
    const { sup } = supervise()
    const [busy, idle] = children(sup)
    const path = await withSocket(sup)
    const r = await run(['-qec', `stty cols 80 rows 24; exec ${REAPKIT} top --interval 300 --count 3 --socket ${path}`, '/dev/null'], { file: '/usr/bin/script', timeoutMs: 60_000 })
    expect(r.code, r.stderr).toBe(0)
    const raw = r.stdout
    expect(raw.split('\x1b[H').length - 1, 'three frames, each from the top left').toBe(3)
    expect(raw).toContain('\x1b[?1049h')
    expect(raw.trimEnd().endsWith('\x1b[?1049l')).toBe(true)
    const { lines, wrapped } = screenOf(raw, 80, 24)
    expect(wrapped, 'no line wider than the terminal').toBe(false)
    const shown = lines.filter((l) => l !== '')
    expect(shown[0]).toMatch(/^2 processes, 2 running; drain: serving; \d\d:\d\d:\d\d UTC$/)
    expect(shown[1]).toMatch(/^ID\s+PID\s+STATUS\s+UPTIME\s+RST\s+CPU\s+RSS\s+READY\s+COMMAND$/)
    const busyLine = shown.find((l) => l.includes(` ${busy} `))!
    expect(busyLine).toMatch(/^busy-with-a~\s+\d+\s+running\s+\d+s\s+0\s+\d+\.\d%\s+[\d.]+[KM]\s+-\s+sh -c while/)
    expect(Number(/(\d+\.\d)%/.exec(busyLine)![1]), 'a busy loop uses a share of a core').toBeGreaterThan(5)
    expect(busyLine, 'its command cut at the 80th column').toMatch(/ sh -c while :;$/)
    expect(shown.find((l) => l.includes(` ${idle} `))).toMatch(/^idle\s+\d+\s+running\s+\d+s\s+0\s+\d+\.\d%\s+[\d.]+[KM]\s+-\s+sleep 1000$/)
  })
})

describe.runIf(linux)('reapkit top without a terminal', () => {
  it('prints plain blocks of lines, no control sequence; --json one snapshot a line', async () => {
    const { sup } = supervise()
    const [busy] = children(sup)
    const path = await withSocket(sup)
    const plain = await run(['top', '--interval', '200', '--count', '2', '--socket', path])
    expect(plain.code, plain.stderr).toBe(0)
    expect(plain.stdout).not.toMatch(/\x1b/)
    const blocks = plain.stdout.trimEnd().split('\n\n')
    expect(blocks).toHaveLength(2)
    for (const block of blocks) {
      const lines = block.split('\n')
      expect(lines).toHaveLength(4)
      expect(lines.every((l) => l.length <= 80)).toBe(true)
    }
    expect(blocks[0]).toMatch(new RegExp(`busy-with-a~\\s+${busy}\\s+running\\s+\\d+s\\s+0\\s+\\.\\.\\.`)) // no share before a second sample
    const json = await run(['top', '--json', '--interval', '200', '--count', '2', '--socket', path])
    const snaps = json.stdout.trimEnd().split('\n').map((l) => JSON.parse(l))
    expect(snaps).toHaveLength(2)
    expect(snaps[1].processes.find((p: { pid: number }) => p.pid === busy).cpuShare).toMatch(/^\d+\.\d%$/)
  })
})

describe.runIf(linux)('subcommands and wrapped commands', () => {
  it("`reapkit top --help` is reapkit's top, not the system's; `reapkit -- CMD` and `reapkit CMD` still run CMD under the wrapper", async () => {
    const help = await run(['top', '--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/^Usage: reapkit ps/)
    expect(help.stdout).toMatch(/reapkit -- top/)
    const wrapped = await run(['--', 'sh', '-c', 'exit 7'])
    expect(wrapped.code).toBe(7)
    const noDashes = await run(['sh', '-c', 'echo "$0 ran"; exit 5'])
    expect(noDashes).toMatchObject({ code: 5, stdout: 'sh ran\n' })
    const usage = await run(['--help'])
    expect(usage.stdout).toMatch(/reapkit ps, logs, restart, stop, top/)
    expect(usage.stdout).toMatch(/put -- first: reapkit -- top/)
    const noSocket = await run(['ps'], { env: { REAPKIT_SOCKET: '' } })
    expect(noSocket.code).toBe(2)
    expect(noSocket.stderr).toMatch(/give --socket PATH or set REAPKIT_SOCKET/)
  })
})
