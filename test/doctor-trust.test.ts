// Issue 28: `reapkit doctor --all-users`, run by root, acts on nothing another user wrote. Before:
// an orphaned "container client" of another user made root run the program its PATH named (and
// load its LD_PRELOAD), and its --cidfile or a conmon lookalike aimed root's --stop at any
// container; a FIFO as the --cidfile hung doctor for ever.
//
// Real users (useradd, setpriv), real engines, real doctor runs; each scenario runs inside a private
// PID namespace (test/fixtures/doctor-trust-ns.cjs as its PID 1), so doctor sees and signals only
// the scenario's processes. The victims are real containers of root's, outside the namespace.
import { spawnSync } from 'node:child_process'
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createServer } from 'node:net'
import { findLeakedContainers, findOrphans, stopLeakedContainers } from '../lib/index'
import { engineCall } from '../lib/mechanisms/container/engine'
import { containerState, engineRun, enginesSkipReason, removeLabelledAndWait, type TestEngine, testEngines, testLabel } from './containers'
import { canUnshare, exitOf, FIXTURES, jsonLines, spawnGroup } from './helpers'

const onPath = (name: string): boolean => spawnSync('sh', ['-c', `command -v ${name}`]).status === 0
const isRoot = process.getuid?.() === 0
const skipReason =
  process.platform !== 'linux'
    ? 'Linux only'
    : !isRoot
      ? 'needs root (it adds a user and runs doctor --all-users)'
      : !canUnshare
        ? 'needs unshare --pid --fork --mount-proc'
        : !['useradd', 'userdel', 'setpriv', 'cc'].every(onPath)
          ? 'needs useradd, userdel, setpriv and cc'
          : enginesSkipReason()

interface DoctorRun {
  status: number | null
  signal: string | null
  ms: number
  json: { containers: { leaked: { id: string }[]; clients: { pid: number; engine: string; via: string | null; container: string | null; note: string }[] }; stoppedContainers?: { id: string; state: string }[] } | null
  stderr: string
}
interface Result {
  event: string
  reason?: string
  pids: number[]
  listing: DoctorRun
  stop: DoctorRun
  markers: Record<string, string>
}

const LOOKALIKE = 'int main(void) { for (;;) pause(); }\n#include <unistd.h>\n'
// Loaded into a root process, it says so (a user's own programs load it too: they write nothing).
const EVIL = `#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void) {
  if (geteuid() != 0) return;
  char path[4096]; const char *home = getenv("HOME");
  snprintf(path, sizeof path, "%s/preload.ran", home ? home : "/tmp");
  FILE *f = fopen(path, "a"); if (f) { fprintf(f, "uid %d\\n", (int)getuid()); fclose(f); }
}
`
const PLANTED = (name: string): string => `#!/bin/sh\nid >> "$HOME/${name}.ran"; echo "$@" >> "$HOME/${name}.ran"\n`

describe.skipIf(skipReason !== null)(`doctor --all-users trusts nothing another user wrote${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  const engines = testEngines()
  const docker = engines.find((e) => e.name === 'docker')
  const podman = engines.find((e) => e.name === 'podman')
  const user = { name: `rk28u${process.pid % 100000}`, uid: 0, gid: 0, home: '' }
  let rootDir = ''
  let label = ''

  beforeAll(() => {
    rootDir = mkdtempSync(join(tmpdir(), 'reapkit-trust-')) // root's, 0700
    user.home = join(rootDir, 'home')
    chmodSync(rootDir, 0o755)
    mkdirSync(join(user.home, 'bin'), { recursive: true })
    spawnSync('userdel', [user.name]) // a leftover of a killed run
    const add = spawnSync('useradd', ['-M', '-d', user.home, '-s', '/bin/sh', user.name], { encoding: 'utf8' })
    if (add.status !== 0) throw new Error(`useradd: ${add.stderr}`)
    const ids = spawnSync('id', [user.name], { encoding: 'utf8' }).stdout
    user.uid = Number(/uid=(\d+)/.exec(ids)![1])
    user.gid = Number(/gid=(\d+)/.exec(ids)![1])
    writeFileSync(join(rootDir, 'lookalike.c'), LOOKALIKE)
    writeFileSync(join(rootDir, 'evil.c'), EVIL)
    expect(spawnSync('cc', ['-O2', '-o', join(rootDir, 'lookalike'), join(rootDir, 'lookalike.c')]).status).toBe(0)
    expect(spawnSync('cc', ['-shared', '-fPIC', '-o', join(user.home, 'evil.so'), join(rootDir, 'evil.c')]).status).toBe(0)
    writeFileSync(join(user.home, 'bin', 'docker'), PLANTED('docker'), { mode: 0o755 })
    writeFileSync(join(user.home, 'bin', 'podman'), PLANTED('podman'), { mode: 0o755 })
    for (const f of ['', 'bin', 'bin/docker', 'bin/podman', 'evil.so']) chownSync(join(user.home, f), user.uid, user.gid)
    chmodSync(user.home, 0o755)
  })

  afterAll(() => {
    spawnSync('userdel', [user.name])
    if (rootDir) rmSync(rootDir, { recursive: true, force: true })
  })

  afterEach(async () => {
    for (const engine of engines) await removeLabelledAndWait(engine, label)
  })

  /** A container of root's, unrelated to reapkit (no reapkit label): the victim. */
  function victim(engine: TestEngine): string {
    const r = engineRun(engine, ['run', '-d', '--label', label, engine.image, 'sleep', '3000'])
    expect(r.code, r.stderr).toBe(0)
    return r.stdout.trim()
  }

  /** Writes `content` as the user would (owned by them) in their home. */
  function asUserFile(name: string, content: string): void {
    writeFileSync(join(user.home, name), content)
    chownSync(join(user.home, name), user.uid, user.gid)
  }

  async function scenario(name: string, extra: Record<string, unknown>): Promise<Result> {
    const config = { user, lookalike: join(rootDir, 'lookalike'), image: (docker ?? podman)!.image, label, dockerHost: docker?.env.DOCKER_HOST ?? 'unix:///nonexistent', ...extra }
    const ns = spawnGroup('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, join(FIXTURES, 'doctor-trust-ns.cjs'), name, JSON.stringify(config)], { env: docker?.env ?? process.env })
    try {
      const r = (await jsonLines(ns.stdout!).next((m) => m.event === 'result' || m.event === 'error', 175_000, `the ${name} scenario`)) as Result
      expect(r.event, JSON.stringify(r)).toBe('result')
      return r
    } finally {
      try {
        process.kill(-ns.pid!, 'SIGKILL') // the namespace's unshare and its PID 1: the kernel ends the rest
      } catch {
        // already gone
      }
      await exitOf(ns, 30_000)
    }
  }

  const notes = (run: DoctorRun): string[] => run.json!.containers.clients.map((c) => `${c.engine} ${c.via}: ${c.note}`)

  it.runIf(podman !== undefined)("item 1: an orphan's PATH and LD_PRELOAD never run as root (listing and --stop), whatever clue it carries", async () => {
    label = testLabel()
    const target = victim(podman!)
    asUserFile('cid-planted', `${target}\n`)
    const r = await scenario('planted', { victims: { podman: target } })
    expect(r.markers, 'a planted program or library ran as root').toEqual({})
    expect(r.listing.status, r.listing.stderr).not.toBe(null)
    // All three clients are listed, each saying why nothing of theirs was looked up as root.
    expect(r.listing.json!.containers.clients).toHaveLength(4)
    for (const c of r.listing.json!.containers.clients) expect(c.container, notes(r.listing).join('\n')).toBe(null)
    expect(notes(r.listing).join('\n')).toMatch(/docker run-label: it runs in another mnt namespace than doctor \(a container\?\).*nothing it names is looked up/)
    expect(containerState(podman!, target)).toBe('running')
  }, 200_000)

  it.runIf(docker !== undefined && podman !== undefined)("item 2: another user's --cidfile and conmon lookalikes, and root's own conmon lookalike, never aim --stop at a container", async () => {
    label = testLabel()
    const dockerVictim = victim(docker!)
    const podmanVictim = victim(podman!)
    const podmanRootVictim = victim(podman!)
    asUserFile('cid', `${dockerVictim}\n`)
    const r = await scenario('victims', { victims: { docker: dockerVictim, podman: podmanVictim, podmanRoot: podmanRootVictim } })
    const all = notes(r.listing).join('\n')
    expect(r.listing.json!.containers.leaked, all).toEqual([])
    expect(r.stop.json!.stoppedContainers ?? [], all).toEqual([])
    expect(containerState(docker!, dockerVictim)).toBe('running')
    expect(containerState(podman!, podmanVictim)).toBe('running')
    expect(containerState(podman!, podmanRootVictim)).toBe('running')
    expect(all).toMatch(/docker cidfile: its --cidfile is uid \d+'s file, no proof.*not opened/)
    // Root's own lookalike: from the scenario's child PID namespace no conmon pid can be compared
    // with the engine's (the next test compares one from the machine's own namespace).
    expect(all).toMatch(/podman conmon: its conmon's pid cannot be compared with the engine's record from a child PID namespace: not proven/)
  }, 200_000)

  it("issue 32 item 6: a --name in another user's orphan, or root's own lookalike, naming root's older container never aims --stop at it", async () => {
    label = testLabel()
    const named: Record<string, string> = {}
    const namedRoot: Record<string, string> = {}
    const ids: Array<[TestEngine, string]> = []
    for (const engine of engines) {
      for (const [into, who] of [[named, 'user'], [namedRoot, 'root']] as const) {
        const name = `rk32-${who}-${engine.name}-${process.pid}`
        const r = engineRun(engine, ['run', '-d', '--name', name, '--label', label, engine.image, 'sleep', '3000'])
        expect(r.code, r.stderr).toBe(0)
        into[engine.name] = name
        ids.push([engine, r.stdout.trim()])
      }
    }
    await new Promise((r) => setTimeout(r, 100)) // created before the lookalikes start (their start is read to ~20 ms)
    const r = await scenario('named', { named, namedRoot })
    const all = notes(r.listing).join('\n')
    expect(r.listing.json!.containers.clients.filter((c) => c.via === 'name'), all).toHaveLength(2 * engines.length)
    for (const c of r.listing.json!.containers.clients) expect(c.container, all).toBe(null)
    expect(r.listing.json!.containers.leaked, all).toEqual([])
    expect(r.stop.json!.stoppedContainers ?? [], all).toEqual([])
    for (const [engine, id] of ids) expect(containerState(engine, id), `${engine.name} ${id}`).toBe('running')
    // Root's own lookalike reaches root's engine, which has the name: its container is older than the process.
    expect(all).toMatch(/created before its client started: not proven its container/)
  }, 200_000)

  // Listing only (nothing signalled), so it runs in the machine's own PID namespace, where the
  // engine's ConmonPid can be compared: a conmon lookalike naming a container is not its conmon.
  it.runIf(podman !== undefined)("item 2: root's own conmon lookalike is not the container's conmon (the engine's ConmonPid), so its container is not listed", async () => {
    label = testLabel()
    const target = victim(podman!)
    const pair = spawnGroup('/bin/bash', ['-c', `exec -a podman ${join(rootDir, 'lookalike')} run -i --rm ${podman!.image} & exec -a conmon ${join(rootDir, 'lookalike')} -c ${target} & wait`], { stdio: ['pipe', 'pipe', 'ignore'] })
    try {
      pair.stdin!.destroy()
      pair.stdout!.destroy()
      await new Promise((r) => setTimeout(r, 500))
      const { trees } = await findOrphans()
      const tree = trees.find((t) => t.root === pair.pid)
      expect(tree, 'the lookalike pair is an orphaned tree').toBeDefined()
      const found = await findLeakedContainers({ trees: [tree!], labels: [label], engines: ['podman'], env: podman!.env })
      expect(found.leaked).toEqual([])
      expect(found.clients).toEqual([expect.objectContaining({ engine: 'podman', via: 'conmon', container: null, note: expect.stringMatching(/the engine does not name conmon \d+ as the monitor of container [0-9a-f]{12}: not proven/) })])
      expect(containerState(podman!, target)).toBe('running')
    } finally {
      process.kill(-pair.pid!, 'SIGKILL')
      await exitOf(pair)
    }
  }, 120_000)

  // A review's F1: an engine call made as another user stayed in doctor's session, so the user's
  // code (their containers.conf, a ptrace of the client) could open root's terminal and type into it.
  it("another user's engine call runs as that user, with only the groups its client had, in a session of its own", async () => {
    const setpriv = spawnSync('sh', ['-c', 'command -v setpriv'], { encoding: 'utf8' }).stdout.trim()
    const setsid = spawnSync('sh', ['-c', 'command -v setsid'], { encoding: 'utf8' }).stdout.trim()
    const client = { engine: 'docker' as const, bin: '/bin/sh', globals: ['-c', 'echo $$; id -u; id -G; cat /proc/$$/stat'], env: { PATH: '/usr/bin:/bin' }, user: { uid: user.uid, gid: user.gid, groups: [user.gid], setpriv, setsid } }
    const [shPid, uid, groups, stat] = (await engineCall(client, [], 10_000)).trim().split('\n')
    const fields = stat!.slice(stat!.lastIndexOf(')') + 2).split(' ') // from field 3
    expect(Number(uid)).toBe(user.uid)
    expect(groups!.trim().split(' ').map(Number)).toEqual([user.gid])
    expect(Number(fields[3]), 'its session is its own').toBe(Number(shPid)) // field 6: session
    expect(Number(fields[3])).not.toBe(Number(readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ')[3]))
    expect(fields[4], 'no controlling terminal').toBe('0') // field 7: tty_nr
  })

  // A review's F3: a report copied (JSON) lost which client found a container; its stop then fell
  // back to doctor's own engine client, with root's rights, for a container another user's endpoint named.
  it.runIf(docker !== undefined)("a copied report's container found as another user is never stopped with doctor's own rights", async () => {
    label = testLabel()
    const target = victim(docker!)
    const copied = { engine: 'docker' as const, id: target, name: '', image: docker!.image, state: 'running', autoRemove: false, owner: null, runId: null, why: 'copied', asUser: user.uid }
    const [result] = await stopLeakedContainers({ leaked: [copied] }, { graceMs: 1000, confirmMs: 1000 })
    expect(result).toMatchObject({ id: target, asUser: user.uid, state: 'uncertain', error: expect.stringMatching(/not stopped with doctor's own rights/) })
    expect(containerState(docker!, target)).toBe('running')
  })

  // A review's F4: each client's look-up had its own bound and they ran one after another, so a
  // user with N orphans pointing at a socket that never answers held root's doctor N x 10 s.
  it.runIf(docker !== undefined)('clients whose endpoint never answers cost doctor at most twice one call\'s bound, however many', async () => {
    const sock = join(user.home, 'hang.sock')
    const held: import('node:net').Socket[] = []
    const server = createServer((c) => held.push(c)) // accepts, never answers
    await new Promise<void>((r) => server.listen(sock, r))
    chmodSync(sock, 0o777)
    const orphans: ReturnType<typeof spawnGroup>[] = []
    try {
      for (let i = 0; i < 6; i++) {
        const o = spawnGroup('setpriv', [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--', '/bin/bash', '-c', `exec -a docker ${join(rootDir, 'lookalike')} run --label reapkit.run=hang${i} -i --rm ${docker!.image}`], { stdio: ['pipe', 'pipe', 'ignore'], env: { PATH: '/usr/bin:/bin', DOCKER_HOST: `unix://${sock}` } })
        o.stdin!.destroy()
        o.stdout!.destroy()
        orphans.push(o)
      }
      await new Promise((r) => setTimeout(r, 500))
      const pids = new Set(orphans.map((o) => o.pid))
      const trees = (await findOrphans({ allUsers: true })).trees.filter((t) => pids.has(t.root))
      expect(trees).toHaveLength(6)
      const started = performance.now()
      const found = await findLeakedContainers({ trees, engines: ['docker'], env: docker!.env, timeoutMs: 1500 })
      const ms = performance.now() - started
      expect(found.clients).toHaveLength(6)
      for (const c of found.clients) expect(c.note).toMatch(/did not answer within|bound for all container clients passed/)
      expect(ms, 'six 1.5 s look-ups one after another took 9 s').toBeLessThan(6000)
    } finally {
      for (const o of orphans) process.kill(-o.pid!, 'SIGKILL')
      await Promise.all(orphans.map((o) => exitOf(o)))
      for (const c of held) c.destroy()
      server.close()
    }
  }, 60_000)

  it.runIf(docker !== undefined)('item 3: a FIFO as the --cidfile (the user\'s, and root\'s own) does not hang doctor', async () => {
    label = testLabel()
    const rootFifo = join(rootDir, 'root-fifo')
    spawnSync('mkfifo', [rootFifo])
    spawnSync('setpriv', [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--', 'mkfifo', join(user.home, 'cidfifo')])
    const r = await scenario('fifo', { rootFifo })
    for (const run of [r.listing, r.stop]) {
      expect(run.signal, `doctor was killed at its bound after ${run.ms} ms`).toBe(null)
      expect(run.ms).toBeLessThan(30_000)
    }
    const all = notes(r.listing).join('\n')
    expect(all).toMatch(/its --cidfile is uid \d+'s file.*not opened/)
    expect(all).toMatch(/Refusing the --cidfile .*root-fifo: it is not a regular file/)
  }, 200_000)
})
