// Issue 18: closeClient, Supervisor (terminate, shutdownAll) and StdioClientTransport.close() on a
// containerized server. Before: `closeClient()` returned phase 'forced' with no survivors while the
// container ran (a false success), and the transport's close() left it running.
import { describe, expect, it } from 'vitest'
import { closeClient, Supervisor } from '../lib/index'
import { StdioClientTransport } from '../lib/mcp/stdio-client'
import { containersWith, describeWithEngines, enginesSkipReason, testEngines } from './containers'
import { containerTestContext, IGNORES_TERM } from './containers-lib'

const skip = enginesSkipReason()

describeWithEngines('containers: closeClient, Supervisor and the stdio transport', skip, () => {
  const t = containerTestContext()

  for (const engine of testEngines()) {
    describe(engine.name, () => {
      it('closeClient on a server that ignores stdin EOF: forced, and the container reported gone only once the engine has removed it', async () => {
        const child = t.run(engine, ['--rm'], IGNORES_TERM)
        const [id] = await t.running(engine)
        const report = await closeClient(child, { closeTimeoutMs: 1000, graceMs: 2000 })
        expect(report.phase).toBe('forced')
        expect(report.containers).toEqual([expect.objectContaining({ ids: [id], state: 'gone', stopped: true })])
        expect(report.containerSurvivors).toEqual([])
        expect(report.uncertain).toBe(false)
        expect(containersWith(engine, t.label)).toEqual([])
      })

      it('closeClient where the client leaves in phase 1 but its container runs on: the container is still stopped, and the close is forced', async () => {
        const child = t.run(engine, ['--rm'], IGNORES_TERM)
        const [id] = await t.running(engine)
        // The client goes (as a client killed from outside would) while its container keeps running.
        const report = await closeClient(child, { closeTimeoutMs: 5000, graceMs: 2000, close: () => process.kill(child.pid!, 'SIGKILL') })
        expect(report.containers).toEqual([expect.objectContaining({ ids: [id], state: 'gone', stopped: true })])
        expect(report.phase).toBe('forced')
        expect(containersWith(engine, t.label)).toEqual([])
      })

      it('closeClient on a server that exits on stdin EOF: graceful, its container reported gone, nothing stopped', async () => {
        const child = t.run(engine, ['--rm'], ['cat'])
        await t.running(engine)
        const report = await closeClient(child, { closeTimeoutMs: 20_000, graceMs: 2000 })
        expect(report.phase).toBe('graceful')
        expect(report.containers).toEqual([expect.objectContaining({ state: 'gone', stopped: false })])
        expect(containersWith(engine, t.label)).toEqual([])
      })

      it('StdioClientTransport.close() on a containerized server that ignores EOF: the container is gone when close() resolves', async () => {
        const env: Record<string, string> = engine.env.DOCKER_HOST ? { DOCKER_HOST: engine.env.DOCKER_HOST } : {}
        const transport = new StdioClientTransport(
          { command: engine.bin, args: ['run', '-i', '--rm', '--label', t.label, engine.image, ...IGNORES_TERM], env, stderr: 'ignore' },
          { closeTimeoutMs: 1000, graceMs: 2000 },
        )
        await transport.start()
        await t.running(engine)
        await transport.close()
        expect(containersWith(engine, t.label)).toEqual([])
      })

      it('Supervisor.terminate reports the container', async () => {
        const supervisor = new Supervisor({ backstop: false })
        try {
          const child = supervisor.spawn(engine.bin, ['run', '-i', '--rm', '--label', t.label, engine.image, ...IGNORES_TERM], { env: engine.env, stdio: ['pipe', 'ignore', 'ignore'] })
          const [id] = await t.running(engine)
          const result = await supervisor.terminate(child.pid!, { graceMs: 1000 })
          expect(result.containers).toEqual([expect.objectContaining({ ids: [id], state: 'gone' })])
          expect(result.containerSurvivors).toEqual([])
          expect(containersWith(engine, t.label)).toEqual([])
        } finally {
          supervisor.dispose()
        }
      })

      it('20 containers at once through Supervisor.shutdownAll: every one confirmed gone, every report says so', async () => {
        const supervisor = new Supervisor({ backstop: false, closeTimeoutMs: 1000, graceMs: 2000, shutdownTimeoutMs: 120_000 })
        try {
          for (let i = 0; i < 20; i++) {
            supervisor.spawn(engine.bin, ['run', '-i', '--rm', '--label', t.label, engine.image, ...IGNORES_TERM], { env: engine.env, stdio: ['pipe', 'ignore', 'ignore'] })
          }
          const ids = await t.running(engine, 20, 180_000)
          const reports = await supervisor.shutdownAll()
          expect(reports).toHaveLength(20)
          for (const r of reports) {
            expect(r.capped).toBe(false)
            expect(r.containers).toEqual([expect.objectContaining({ state: 'gone' })])
            expect(r.containerSurvivors).toEqual([])
            expect(r.uncertain).toBe(false)
          }
          expect(reports.flatMap((r) => r.containers.flatMap((c) => c.ids)).sort()).toEqual([...ids].sort())
          expect(containersWith(engine, t.label)).toEqual([])
        } finally {
          supervisor.dispose()
        }
      }, 300_000)
    })
  }
})
