// Issue 18 item 4: `reapkit doctor` finds leaked containers, on every engine that runs here. Before:
// doctor read the process table only, so a container whose owner was gone was never listed, and
// `--stop` of an orphaned `docker run` client left its container running.
//
// The listings here pass `--label <this test's label>`: other tests share the daemons, and only this
// test's containers are judged. `--containers` reads no process and signals none, so it runs here; the
// orphaned clients' --stop signals their trees and runs in a private PID namespace.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type ContainerReport, findLeakedContainers, findOrphans, type StoppedContainer, stopLeakedContainers } from '../lib/index'
import { formatOwner, machineId, ownerOf, ownPidNamespace } from '../lib/mechanisms/container/owner'
import { removeCgroups } from './cgroup-lib'
import { conmonsOf, containerState, containersWith, describeWithEngines, engineRun, enginesSkipReason, removeLabelledAndWait, type TestEngine, testEngines, testLabel } from './containers'
import { canUnshare, DIST, exitOf, FIXTURES, jsonLines, ROOT, spawnGroup, waitFor } from './helpers'

const BIN = join(ROOT, 'bin', 'reapkit')
const skip = enginesSkipReason()

const onPath = (name: string): boolean => (process.env.PATH ?? '').split(':').some((d) => d !== '' && existsSync(join(d, name)))

interface DoctorJson {
  containers: ContainerReport
  stoppedContainers?: StoppedContainer[]
}

function doctor(engine: TestEngine, label: string, args: string[]): { status: number | null; json: DoctorJson; stderr: string } {
  const r = spawnSync(BIN, ['doctor', '--containers', '--json', '--engine', engine.name, '--label', label, ...args], { env: engine.env, encoding: 'utf8', timeout: 90_000 })
  let json: DoctorJson
  try {
    json = JSON.parse(r.stdout) as DoctorJson
  } catch {
    throw new Error(`doctor printed no JSON (status ${r.status}): ${r.stdout}\n${r.stderr}`)
  }
  return { status: r.status, json, stderr: r.stderr }
}

describe('reapkit doctor: container options', () => {
  it('refuses bad options before asking any engine, and bad arguments with exit status 2', async () => {
    for (const bad of [{ engines: ['lxc'] }, { engines: 'docker' }, { labels: [''] }, { labels: ['=x'] }, { trees: [1] }, { env: 'x' }, { timeoutMs: -1 }]) {
      await expect(findLeakedContainers(bad as never), JSON.stringify(bad)).rejects.toMatchObject({ code: expect.stringMatching(/^ERR_(INVALID_ARG_TYPE|OUT_OF_RANGE)$/) })
    }
    await expect(findLeakedContainers(null as never)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
    await expect(stopLeakedContainers({ leaked: [] }, { graceMs: -5 })).rejects.toMatchObject({ code: expect.stringMatching(/^ERR_(INVALID_ARG_TYPE|OUT_OF_RANGE)$/) })
    await expect(stopLeakedContainers(null as never)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
    for (const args of [['--engine', 'lxc'], ['--containers', '--path', '/tmp'], ['--no-containers', '--label', 'a=b'], ['--label'], ['--containers', '--label', '=x']]) {
      const r = spawnSync(BIN, ['doctor', ...args], { encoding: 'utf8', timeout: 30_000 })
      expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(2)
      expect(r.stderr).toMatch(/^reapkit doctor: /)
    }
  })
})

const readOr = (path: string): string => {
  try {
    return readFileSync(path, 'utf8').trim()
  } catch {
    return '' // gone
  }
}
/** Where the cgroup v2 hierarchy is mounted ('' when it is not). */
const cgroupHierarchy = readOr('/proc/self/mountinfo').split('\n').find((l) => l.includes(' - cgroup2 ') && l.split(' ')[3] === '/')?.split(' ')[4] ?? ''
/**
 * The cgroups process `pid` made as a wrapper, beside its own: their names carry its owner (PID
 * namespace, pid there, start time), so they are exactly its own even once empty.
 */
const cgroupsMadeBy = (pid: string): string[] => {
  const rel = /^0::(.*)$/m.exec(readOr(`/proc/${pid}/cgroup`))?.[1]
  const ns = /\[(\d+)\]/.exec(readlinkOr(`/proc/${pid}/ns/pid`))?.[1]
  const nsPid = /^NSpid:.*\s(\d+)$/m.exec(readOr(`/proc/${pid}/status`))?.[1]
  const stat = readOr(`/proc/${pid}/stat`)
  const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
  if (!rel || !cgroupHierarchy || !ns || !nsPid || !start) return []
  const dir = join(cgroupHierarchy, rel)
  const owner = `_${ns}_${nsPid}_${start}_`
  try {
    return readdirSync(dir).filter((n) => n.startsWith('reapkit-') && n.includes(owner)).map((n) => join(dir, n))
  } catch {
    return []
  }
}
const readlinkOr = (path: string): string => {
  try {
    return readlinkSync(path)
  } catch {
    return ''
  }
}

describeWithEngines('reapkit doctor: leaked containers', skip, () => {
  let label = ''
  const started: ChildProcess[] = []
  beforeEach(() => {
    label = testLabel()
  })
  afterEach(async () => {
    // The containers first: a podman service started here must still be there to end its own.
    for (const engine of testEngines()) await removeLabelledAndWait(engine, label, { conmonParents: started.map((h) => h.pid!) })
    for (const c of started) {
      if (c.exitCode !== null || c.signalCode !== null) continue
      noteCgroups(c)
      try {
        process.kill(-c.pid!, 'SIGKILL') // a group of ours (the namespace's unshare and its PID 1)
      } catch {
        c.kill('SIGKILL')
      }
    }
    await Promise.all(started.map((c) => exitOf(c)))
    started.length = 0
    // A wrapper SIGKILLed with its namespace leaves its cgroup (empty) for doctor: removed here, the
    // exact ones its tree was in before the kill.
    const cgroups = [...wrapperCgroups]
    wrapperCgroups.clear()
    if (cgroups.length > 0) await removeCgroups(cgroups)
  })
  /** The cgroups the wrappers under each `unshare` made (paths), found by their owner before the kill. */
  const wrapperCgroups = new Set<string>()
  const noteCgroups = (started: ChildProcess): void => {
    const walk = (pid: string, depth: number): void => {
      for (const path of cgroupsMadeBy(pid)) wrapperCgroups.add(path)
      if (depth < 6) for (const child of readOr(`/proc/${pid}/task/${pid}/children`).split(' ').filter(Boolean)) walk(child, depth + 1)
    }
    walk(String(started.pid), 0)
  }

  /** A process of ours, started (and, unless `keep`, SIGKILLed and reaped): its owner label value. */
  async function owner(keep: boolean): Promise<string> {
    const p = spawn('sleep', ['1000'], { stdio: 'ignore' })
    started.push(p)
    await new Promise((r) => p.once('spawn', r))
    const value = formatOwner(ownerOf(p.pid!))
    expect(value).toMatch(/\/\d+\/\d+\/pidns:\d+\/mid:([0-9a-f]{32}|-)$/) // its start time, PID namespace and machine were read
    if (!keep) {
      p.kill('SIGKILL')
      await exitOf(p)
    }
    return value
  }

  function runDetached(engine: TestEngine, labels: string[], rm = false): string {
    const r = engineRun(engine, ['run', '-d', ...(rm ? ['--rm'] : []), '--label', label, ...labels.flatMap((l) => ['--label', l]), engine.image, 'sleep', '1000'])
    expect(r.code, r.stderr).toBe(0)
    return r.stdout.trim()
  }

  for (const engine of testEngines()) {
    describe(engine.name, () => {
      it('a container whose reapkit owner is gone is listed (engine, id, name, image, owner, why), and --stop removes it through the engine', async () => {
        const ownerValue = await owner(false)
        const id = runDetached(engine, [`reapkit.owner=${ownerValue}`, 'reapkit.run=doctor-test'], true)
        const listed = doctor(engine, label, [])
        expect(listed.status, listed.stderr).toBe(1)
        expect(listed.json.containers.engines).toEqual([{ engine: engine.name, answered: true }])
        expect(listed.json.containers.leaked).toEqual([
          expect.objectContaining({
            engine: engine.name,
            id,
            name: expect.stringMatching(/^[\w.-]+$/),
            image: expect.stringContaining('reapkit-test/busybox'),
            state: 'running',
            autoRemove: true,
            runId: 'doctor-test',
            owner: { hostname: ownerOf().hostname, bootId: ownerOf().bootId, pid: Number(ownerValue.split('/')[2]), startTime: ownerValue.split('/')[3], pidNamespace: ownPidNamespace(), machineId: machineId() },
            why: `its owner, pid ${ownerValue.split('/')[2]}, is gone`,
          }),
        ])
        expect(listed.json.containers.foreign).toEqual([])
        const stopped = doctor(engine, label, ['--stop', '--yes', '--grace-ms', '1000'])
        expect(stopped.status, stopped.stderr).toBe(0)
        expect(stopped.json.stoppedContainers).toEqual([{ engine: engine.name, id, name: listed.json.containers.leaked[0]!.name, state: 'gone' }])
        expect(containersWith(engine, label)).toEqual([])
        expect(doctor(engine, label, []).status).toBe(0)
      }, 120_000)

      it('a container whose owner is alive is not listed, nor one started by hand with -d', async () => {
        const alive = runDetached(engine, [`reapkit.owner=${await owner(true)}`])
        const plain = runDetached(engine, [])
        const listed = doctor(engine, label, [])
        expect(listed.status, listed.stderr).toBe(0)
        expect(listed.json.containers).toMatchObject({ leaked: [], foreign: [], clients: [] })
        const stopped = doctor(engine, label, ['--stop', '--yes'])
        expect(stopped.status).toBe(0)
        expect(containerState(engine, alive)).toBe('running')
        expect(containerState(engine, plain)).toBe('running')
      }, 120_000)

      it("another host's owner is listed apart as not ours to judge, and --stop leaves it running", async () => {
        const dead = (await owner(false)).split('/')
        const id = runDetached(engine, [`reapkit.owner=elsewhere.example/${dead.slice(1).join('/')}`])
        const listed = doctor(engine, label, [])
        expect(listed.status).toBe(0) // listed, but nothing of ours leaked
        expect(listed.json.containers.leaked).toEqual([])
        expect(listed.json.containers.foreign).toEqual([expect.objectContaining({ id, owner: expect.objectContaining({ hostname: 'elsewhere.example' }), why: expect.stringMatching(/host elsewhere\.example.*not ours to judge/) })])
        const stopped = doctor(engine, label, ['--stop', '--yes', '--grace-ms', '0'])
        expect(stopped.status).toBe(0)
        expect(stopped.json.stoppedContainers ?? []).toEqual([])
        expect(containerState(engine, id)).toBe('running')
      }, 120_000)

      // Issue 28 item 4: before, any other boot id of this host name was "an earlier boot": a
      // machine of the same name on the same engine (a shared daemon, cloned VMs) had its live
      // runs listed as leaked, and --stop stopped them.
      it('another boot id is an earlier boot only with this machine id and a creation before this boot: else listed apart, and --stop leaves it running', async () => {
        const dead = (await owner(false)).split('/') // host, boot, pid, start, pidns, mid
        const otherBoot = '00000000-0000-4000-8000-000000000000'
        const noMachine = runDetached(engine, [`reapkit.owner=${[dead[0], otherBoot, ...dead.slice(2, 5)].join('/')}`])
        const otherMachine = runDetached(engine, [`reapkit.owner=${[dead[0], otherBoot, ...dead.slice(2, 5), 'mid:0123456789abcdef0123456789abcdef'].join('/')}`])
        const thisMachine = runDetached(engine, [`reapkit.owner=${[dead[0], otherBoot, ...dead.slice(2)].join('/')}`]) // created now, in this boot
        const listed = doctor(engine, label, [])
        expect(listed.status, listed.stderr).toBe(0)
        expect(listed.json.containers.leaked).toEqual([])
        const foreign = Object.fromEntries(listed.json.containers.foreign.map((c) => [c.id, c.why]))
        expect(foreign[noMachine]).toMatch(/names no machine id.*not ours to judge/)
        expect(foreign[otherMachine]).toMatch(/another machine .*same name.*not ours to judge/)
        if (machineId() !== 'mid:-') expect(foreign[thisMachine]).toMatch(/created it during this boot.*not ours to judge/)
        const stopped = doctor(engine, label, ['--stop', '--yes', '--grace-ms', '0'])
        expect(stopped.status).toBe(0)
        expect(stopped.json.stoppedContainers ?? []).toEqual([])
        for (const id of [noMachine, otherMachine, thisMachine]) expect(containerState(engine, id)).toBe('running')
      }, 120_000)

      // Before the owner label named its PID namespace, a pid from another namespace was judged
      // as if it were one of ours: gone, or worse, another live process.
      it('an owner label naming another PID namespace is listed apart as not judged, and --stop leaves it running', async () => {
        const dead = (await owner(false)).split('/') // this host, this boot, a dead pid: only the namespace differs
        const other = ownPidNamespace() === 'pidns:1' ? 'pidns:2' : 'pidns:1'
        const value = [...dead.slice(0, 4), other, ...dead.slice(5)].join('/')
        const id = runDetached(engine, [`reapkit.owner=${value}`])
        const listed = doctor(engine, label, [])
        expect(listed.status, listed.stderr).toBe(0)
        expect(listed.json.containers.leaked).toEqual([])
        expect(listed.json.containers.foreign).toEqual([
          expect.objectContaining({ id, owner: expect.objectContaining({ pid: Number(dead[2]), pidNamespace: other }), why: expect.stringMatching(/^owner in another PID namespace: not judged/) }),
        ])
        const words = spawnSync(BIN, ['doctor', '--containers', '--engine', engine.name, '--label', label], { env: engine.env, encoding: 'utf8', timeout: 90_000 })
        expect(words.stdout).toContain('owner in another PID namespace: not judged')
        const stopped = doctor(engine, label, ['--stop', '--yes', '--grace-ms', '0'])
        expect(stopped.status, stopped.stderr).toBe(0)
        expect(stopped.json.stoppedContainers ?? []).toEqual([])
        expect(containerState(engine, id)).toBe('running')
      }, 120_000)

      // The wrapper is PID 1 of its namespace: its label said pid 1, which doctor outside read as
      // init (another start time) and called the live owner gone. Docker only: podman must never
      // run inside unshare (its network namespace mounts would break podman machine-wide).
      it.runIf(canUnshare && engine.name === 'docker')('a run whose wrapper lives in a child PID namespace (unshare --pid) is not listed as leaked by doctor outside it, nor stopped', async () => {
        const wrapper = spawnGroup('unshare', ['--pid', '--fork', '--mount-proc', BIN, '--', engine.bin, 'run', '-i', '--rm', '--label', label, engine.image, 'sleep', '1000'], {
          env: engine.env,
          stdio: ['pipe', 'pipe', 'pipe'],
        })
        started.push(wrapper)
        let ids: string[] = []
        await waitFor(() => (ids = containersWith(engine, label, false)).length === 1, 60_000, 'the container')
        const listed = doctor(engine, label, [])
        expect(listed.status, listed.stderr).toBe(0)
        expect(listed.json.containers.leaked).toEqual([])
        expect(listed.json.containers.foreign).toEqual([
          expect.objectContaining({ id: ids[0], owner: expect.objectContaining({ pid: 1, pidNamespace: expect.not.stringMatching(`^${ownPidNamespace()}$`) }), why: expect.stringMatching(/^owner in another PID namespace: not judged/) }),
        ])
        const stopped = doctor(engine, label, ['--stop', '--yes', '--grace-ms', '0'])
        expect(stopped.status, stopped.stderr).toBe(0)
        expect(stopped.json.stoppedContainers ?? []).toEqual([])
        expect(containerState(engine, ids[0]!)).toBe('running')
        expect(wrapper.exitCode).toBe(null)
      }, 120_000)

      // The wrapper in a child PID namespace under the parent's /proc (unshare --pid without
      // --mount-proc): its label once had no namespace, its pid a number of the child namespace and
      // its start time read from the parent's /proc at that number, so doctor outside looked that
      // number up as its own (a pid free there: "gone") and --stop ended a live run. The wrapper is
      // made to get a pid number that no process here has (the child namespace numbers from 1 up).
      it.runIf(canUnshare && engine.name === 'docker')("a wrapper in a child PID namespace under the parent's /proc is not listed as leaked by doctor outside it, nor stopped", async () => {
        let target = 400
        while (existsSync(`/proc/${target}`)) target++
        // sh is PID 1, each `true` takes the next number: the wrapper (not exec'd: `; exit 0`) gets `target`.
        const script = `i=2; while [ $i -lt ${target} ]; do /bin/true; i=$((i+1)); done; "$@"; exit 0`
        const wrapper = spawnGroup('unshare', ['--pid', '--fork', '--kill-child', 'sh', '-c', script, 'sh', BIN, '--', engine.bin, 'run', '-i', '--rm', '--label', label, engine.image, 'sleep', '1000'], {
          env: engine.env,
          stdio: ['pipe', 'pipe', 'pipe'],
        })
        started.push(wrapper)
        let ids: string[] = []
        await waitFor(() => (ids = containersWith(engine, label, false)).length === 1, 90_000, 'the container')
        const listed = doctor(engine, label, [])
        expect(listed.status, listed.stderr).toBe(0)
        expect(listed.json.containers.leaked).toEqual([])
        expect(listed.json.containers.foreign).toEqual([
          expect.objectContaining({
            id: ids[0],
            owner: expect.objectContaining({ pid: target, startTime: '-', pidNamespace: expect.not.stringMatching(`^${ownPidNamespace()}$`) }),
            why: expect.stringMatching(/^owner in another PID namespace: not judged/),
          }),
        ])
        const stopped = doctor(engine, label, ['--stop', '--yes', '--grace-ms', '0'])
        expect(stopped.status, stopped.stderr).toBe(0)
        expect(stopped.json.stoppedContainers ?? []).toEqual([])
        expect(containerState(engine, ids[0]!)).toBe('running')
        expect(wrapper.exitCode).toBe(null)
      }, 150_000)

      // Under a /proc of another namespace (unshare --pid without --mount-proc) no pid can be looked
      // up as its label wrote it: a label without a namespace is not judged there either.
      it.runIf(canUnshare && engine.name === 'docker')('doctor under a /proc that is not its own namespace judges no owner label without a namespace', async () => {
        const old = (await owner(false)).split('/').slice(0, 4).join('/') // a dead pid, as an older reapkit wrote it
        const id = runDetached(engine, [`reapkit.owner=${old}`])
        const r = spawnSync('unshare', ['--pid', '--fork', '--kill-child', BIN, 'doctor', '--containers', '--json', '--engine', 'docker', '--label', label], { env: engine.env, encoding: 'utf8', timeout: 90_000 })
        const report = (JSON.parse(r.stdout) as DoctorJson).containers
        expect(report.leaked).toEqual([])
        expect(report.foreign).toEqual([expect.objectContaining({ id, why: expect.stringMatching(/PID namespace.*not ours to judge/) })])
        expect(r.status, r.stderr).toBe(0)
      }, 120_000)

      it('an engine that does not answer, or is not installed, is skipped and said so; the others are still listed', async () => {
        const id = runDetached(engine, [`reapkit.owner=${await owner(false)}`])
        // The other engine pointed at a socket nobody listens on; nerdctl where it is not installed.
        const env = { ...engine.env, ...(engine.name === 'docker' ? { CONTAINER_HOST: 'unix:///nonexistent/reapkit-doctor.sock' } : { DOCKER_HOST: 'unix:///nonexistent/reapkit-doctor.sock' }) }
        const report = await findLeakedContainers({ env, labels: [label] })
        const other = engine.name === 'docker' ? 'podman' : 'docker'
        expect(report.leaked.map((c) => c.id)).toEqual([id])
        expect(report.engines.find((e) => e.engine === engine.name)).toEqual({ engine: engine.name, answered: true })
        expect(report.engines.find((e) => e.engine === other)).toMatchObject({ answered: false, reason: expect.stringMatching(/.+/) })
        const nerdctl = report.engines.find((e) => e.engine === 'nerdctl')!
        if (!onPath('nerdctl')) expect(nerdctl).toEqual({ engine: 'nerdctl', answered: false, reason: 'not installed' })
      }, 120_000)

      it.runIf(engine.name === 'podman')("podman's conmon beside its client, under a subreaper host that lost its own host, names the container (listed and stopped through the engine; nothing signalled)", async () => {
        const host = spawnGroup(process.execPath, [join(FIXTURES, 'doctor-conmon-host.cjs'), engine.bin, 'run', '-i', '--label', label, engine.image, 'sleep', '1000'], {
          env: { ...engine.env, REAPKIT_DIST: DIST },
          stdio: ['pipe', 'pipe', 'ignore'],
        })
        started.push(host)
        const ready = await jsonLines(host.stdout!).next((m) => typeof m.client === 'number', 30_000, 'the host')
        let ids: string[] = []
        await waitFor(() => (ids = containersWith(engine, label, false)).length === 1, 60_000, 'the container')
        await waitFor(() => conmonsOf(new Set([host.pid!])).length === 1, 30_000, 'conmon re-parented to the host')
        // The host's own host goes: nobody writes its stdin or reads its stdout any more.
        host.stdin!.destroy()
        host.stdout!.destroy()
        const tree = (await findOrphans()).trees.find((t) => t.root === host.pid)
        expect(tree?.processes.map((p) => p.pid)).toContain(ready.client)
        const found = await findLeakedContainers({ trees: [tree!], engines: ['podman'], labels: [label] })
        expect(found.clients).toEqual([{ pid: ready.client, root: host.pid, engine: 'podman', container: ids[0], via: 'conmon', note: 'listed with the leaked containers' }])
        expect(found.leaked).toEqual([expect.objectContaining({ id: ids[0], owner: null, client: { pid: ready.client, root: host.pid }, why: expect.stringContaining('conmon') })])
        expect(await stopLeakedContainers(found, { graceMs: 0 })).toEqual([expect.objectContaining({ id: ids[0], state: 'gone' })])
        expect(containerState(engine, ids[0]!)).not.toBe('running')
      }, 120_000)

      it.runIf(canUnshare)('orphaned run clients (PID namespace): listed with the container their reapkit.run label, --cidfile or --name names, stopped through the engine; the one that cannot be told is said so (and what to do) and its container left running; a forged --name of an older container, a name taken after a rename, a name no engine accepts are no proof', async () => {
        const dir = mkdtempSync(join(tmpdir(), 'reapkit-doctor-cid-'))
        try {
          // podman's own client creates the container's mounts (its network namespace...) in the
          // mount namespace it runs in, which `--mount-proc` makes private: the clients in the
          // namespace go through a podman service outside it (remote mode, as on macOS or Windows).
          let env = engine.env
          if (engine.name === 'podman') {
            const sock = join(dir, 'podman.sock')
            started.push(spawn('podman', ['system', 'service', '--time=0', `unix://${sock}`], { stdio: 'ignore', env: engine.env }))
            await waitFor(() => existsSync(sock), 30_000, 'the podman service')
            env = { ...engine.env, CONTAINER_HOST: `unix://${sock}` }
          }
          const ns = spawnGroup('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, join(FIXTURES, 'doctor-containers-ns.cjs'), engine.name, engine.image, label, dir], { env })
          started.push(ns)
          const r = await jsonLines(ns.stdout!).next((m) => m.event === 'result' || m.event === 'error', 160_000, 'the scenario')
          expect(r.event, JSON.stringify(r)).toBe('result')
          const [labelled, withCidfile, untold, named, renamedA, renamedB, forged, badName] = r.clients as number[]
          const { byRun, byCidfile, byName, old, moved, impostors } = r.containers
          const report = r.first.json.containers as ContainerReport
          expect(r.first.status).toBe(1)
          expect(r.first.json.trees.map((t: { root: number }) => t.root).sort()).toEqual([...r.clients].sort())
          const clients = Object.fromEntries(report.clients.map((c) => [c.pid, c]))
          expect(clients[labelled]).toMatchObject({ engine: engine.name, container: byRun, via: 'run-label' })
          expect(clients[withCidfile]).toMatchObject({ engine: engine.name, container: byCidfile, via: 'cidfile', note: 'listed with the leaked containers' })
          expect(clients[untold]).toMatchObject({ engine: engine.name, container: null, via: null, note: expect.stringMatching(/cannot be told.*nothing is stopped.*`\w+ ps`.*stop.*--name/) })
          // The plain `run -i --rm --name X` of a host without reapkit: the engine's container of that name, created after its client started.
          expect(clients[named]).toMatchObject({ engine: engine.name, container: byName, via: 'name', note: 'listed with the leaked containers' })
          expect(report.leaked).toContainEqual(expect.objectContaining({ id: byName, owner: null, client: { pid: named, root: named }, why: expect.stringContaining('--name') }))
          // Its container renamed while it lives, a new container took the name after it started:
          // the engine's record is not what its argv runs, so not its (listed, never stopped).
          expect(clients[renamedA]).toMatchObject({ engine: engine.name, container: null, via: 'name', note: expect.stringMatching(/is not what its client runs \(no -i; no --rm\): not proven its container, nothing is stopped/) })
          expect(clients[renamedB]).toMatchObject({ engine: engine.name, container: null, via: 'name', note: expect.stringMatching(/is not what its client runs \(command \["sleep","1001"\], not \["sleep","1000"\]\): not proven its container/) })
          for (const id of [impostors.a, impostors.b, moved.a, moved.b]) expect([...report.leaked, ...report.foreign].map((c) => c.id)).not.toContain(id)
          expect(r.after.impostors).toEqual(['running', 'running'])
          expect(r.after.moved).toEqual(['running', 'running']) // no longer by the name its client gives: never found, never stopped
          if (old) {
            // A name in an argv is a word: the container of that name (in every other way what its
            // argv runs) was created ~100 ms before the process started, so not its.
            expect(clients[forged]).toMatchObject({ engine: engine.name, container: null, via: 'name', note: expect.stringMatching(/created before its client started: not proven its container, nothing is stopped/) })
            expect([...report.leaked, ...report.foreign].map((c) => c.id)).not.toContain(old)
            expect(r.after.old).toBe('running')
            // `--name=-l` never reaches the engine (podman's inspect would read it as --latest).
            expect(clients[badName]).toMatchObject({ engine: engine.name, container: null, via: 'name', note: expect.stringMatching(/its --name "-l" is no container name an engine accepts: not looked up: nothing is stopped/) })
          } else console.warn('no C compiler: the forged --name cases were not run')
          // The --cidfile's container has no owner label: its orphaned client is what lists it.
          expect(report.leaked).toContainEqual(expect.objectContaining({ id: byCidfile, owner: null, client: { pid: withCidfile, root: withCidfile }, why: expect.stringContaining('--cidfile') }))
          expect(report.leaked.map((c) => c.id).sort()).toEqual([byCidfile, byName].sort())
          // The labelled one names its owner (the dead host), whose pid a child PID namespace cannot judge: listed, never stopped.
          expect(report.foreign).toEqual([expect.objectContaining({ id: byRun, runId: expect.any(String), client: { pid: labelled, root: labelled }, why: expect.stringMatching(/PID namespace.*not ours to judge/) })])
          expect(r.stop.json.stoppedContainers.map((c: { id: string; state: string }) => [c.id, c.state]).sort()).toEqual([[byCidfile, 'gone'], [byName, 'gone']].sort())
          expect(r.stop.status, r.stop.stderr).toBe(0)
          expect(r.after.byCidfile).toBe('gone')
          expect(r.after.byName).toBe('gone')
          expect(r.after.untold).toBe('running') // not stopped blind: its client is gone, it runs on
          expect(r.clientsAlive).toEqual([])
          // A client whose host lives (its pipes held): neither it nor its container is touched.
          expect(report.clients.map((c) => c.pid)).not.toContain(r.decoy.pid)
          expect([...report.leaked, ...report.foreign].map((c) => c.id)).not.toContain(r.decoy.id)
          expect(r.decoy).toMatchObject({ state: 'running', alive: true })
          expect(await exitOf(ns, 30_000)).toEqual({ code: 0, signal: null })
        } finally {
          rmSync(dir, { recursive: true, force: true })
        }
      }, 200_000)
    })
  }
})

// A docker that does not answer: before, `doctor --containers --engine docker` printed "No leaked
// containers." and exited 0, an all-clear for what it never saw.
const noClient = process.platform !== 'linux' ? 'Linux only' : onPath('docker') ? null : 'no docker client on PATH'
describe.skipIf(noClient !== null)(`doctor: containers asked for and no engine answered${noClient ? ` (skipped: ${noClient})` : ''}`, () => {
  it('says nothing could be checked and exits 1, in words and in JSON', () => {
    const env = { ...process.env, DOCKER_HOST: 'unix:///nonexistent/reapkit-doctor.sock' }
    const words = spawnSync(BIN, ['doctor', '--containers', '--engine', 'docker'], { env, encoding: 'utf8', timeout: 60_000 })
    expect(words.stdout).not.toContain('No leaked containers')
    expect(words.stdout).toMatch(/Container engines asked: none answered; skipped: docker \(.*nonexistent/)
    expect(words.stdout).toContain('Nothing could be checked')
    expect(words.status).toBe(1)
    const json = spawnSync(BIN, ['doctor', '--containers', '--json', '--engine', 'docker'], { env, encoding: 'utf8', timeout: 60_000 })
    expect((JSON.parse(json.stdout) as DoctorJson).containers.engines).toEqual([expect.objectContaining({ engine: 'docker', answered: false })])
    expect(json.status).toBe(1)
  })
})
