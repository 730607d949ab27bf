// `reapkit --` with the command in a cgroup of its own: the stop's edges (the review of the cgroup
// path). Real processes, real cgroups, each run inside a private PID namespace
// (test/fixtures/wrapper-cgroup-stop.sh sends signals): the namespace, and all in it, dies with the
// script. Every cgroup a run or a test made is killed and removed after each test.
//
// - cgroups the command makes inside its own (a library spawn({cgroup:true}), a nested reapkit --)
//   get the stop's SIGTERM, and are removed with it;
// - a small open-file limit with hundreds of members: the pins are sized to it, SIGTERM reaches all;
// - processes started after the stop (a server's cleanup helpers) are left until the grace ends;
// - a child that moved itself into another cgroup is stopped all the same (the subreaper's way);
// - the verbose events stay JSON whatever the path, and say why there is no cgroup.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { removeCgroups, wrapperEvents } from './cgroup-lib'
import { canUnshare, DIST, FIXTURES, ROOT } from './helpers'

const BIN = join(ROOT, 'bin', 'reapkit')
const SCRIPT = join(FIXTURES, 'wrapper-cgroup-stop.sh')
const cgroup: { available: boolean; reason?: string } =
  process.platform === 'linux' ? require(DIST).capabilities().cgroup : { available: false, reason: 'not Linux' }
const can = cgroup.available && canUnshare
const isRoot = process.getuid?.() === 0
const dir = mkdtempSync(join(tmpdir(), 'reapkit-cli-cgroup-stop-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The directory of this process's own cgroup (v2), where the wrapper makes the command's. */
function ownCgroupDir(): string {
  const line = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').find((l) => l.includes(' - cgroup2 ') && l.split(' ')[3] === '/')
  const own = readFileSync('/proc/self/cgroup', 'utf8').match(/^0::(.*)$/m)![1]
  return line!.split(' ')[4] + (own === '/' ? '' : own)
}

/** Cgroups to remove after each test (killed first, bounded), deepest first. */
const made: string[] = []
afterEach(() => removeCgroups(made.splice(0).reverse()))

/** A cgroup of the test's own, beside the wrapper's (removed after the test). */
function testCgroup(name: string): string {
  const path = join(ownCgroupDir(), `${name}-${process.pid}-${made.length}`)
  mkdirSync(path)
  made.push(path)
  return path
}

let runs = 0
/** One run of the fixture: `cmd` under the wrapper (OUT is the run's directory in it). */
function run(cmd: string, options: string[], env: Record<string, string> = {}) {
  const out = join(dir, `run-${++runs}`)
  mkdirSync(out)
  const r = spawnSync('unshare', ['--pid', '--kill-child', '--fork', '--mount-proc', 'sh', SCRIPT, BIN, out, ...options], {
    encoding: 'utf8',
    timeout: 90_000,
    env: { ...process.env, ...env, CMD: `export OUT=${out}; ${cmd}` },
  })
  const { events, start } = wrapperEvents(out, made)
  const status = Number(r.stdout.match(/^status (\d+)$/m)?.[1])
  const procs = Object.fromEntries([...r.stdout.matchAll(/^proc (\S+) \d+ (\S+)$/gm)].map((m) => [m[1], m[2]]))
  const ev = (name: string) => events.find((e) => e.event === name)
  return { r, out, events, start, status, procs, ev }
}

/** `n` sleeping members, started in the background of the command's shell. */
const members = (n: number) => `i=0; while [ $i -lt ${n} ]; do sleep 1000 & i=$((i + 1)); done`

describe.runIf(process.platform === 'linux')('reapkit -- command, the stop of its cgroup', () => {
  it.skipIf(!can)('cgroups the command made inside its own (n0/n1/n2) get the SIGTERM, and are removed with it', () => {
    const cmd = `d=$(grep ' - cgroup2 ' /proc/self/mountinfo | head -1 | cut -d' ' -f5)$(sed -n 's/^0:://p' /proc/self/cgroup)
      mkdir -p "$d/n0/n1/n2"
      sh -c 'echo $$ > "$1/n0/n1/n2/cgroup.procs"; trap "echo term > $OUT/nested; exit 0" TERM; touch $OUT/ready2; while :; do sleep 0.1; done' _ "$d" &
      sh -c 'echo $$ > "$1/n0/cgroup.procs"; trap "echo term > $OUT/n0; exit 0" TERM; touch $OUT/ready0; while :; do sleep 0.1; done' _ "$d" &
      i=0; while { [ ! -e $OUT/ready0 ] || [ ! -e $OUT/ready2 ]; } && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
      touch $OUT/ready
      exec sleep 1000` // (ready once both have their trap: a SIGTERM before it would end one silently)
    const { r, status, start, ev, out } = run(cmd, ['--grace', '5000'])
    expect(status, r.stderr).toBe(143)
    expect(readFileSync(join(out, 'nested'), 'utf8')).toBe('term\n') // three levels down: signalled, not killed
    expect(readFileSync(join(out, 'n0'), 'utf8')).toBe('term\n')
    expect(ev('escalate')).toBeUndefined()
    expect(ev('cgroup')).toMatchObject({ path: start.cgroup, killed: false, removed: true })
    expect(existsSync(start.cgroup)).toBe(false)
  })

  it.skipIf(!can)('an open-file limit of 64 with 300 members: the pins fit it, every member gets SIGTERM, no escalation', () => {
    const { r, status, ev } = run(`${members(300)}; touch $OUT/ready; wait`, ['--grace', '10000'], { NOFILE: '64' })
    expect(status, r.stderr).toBe(143)
    expect(ev('escalate')).toBeUndefined()
    expect(ev('cgroup')).toMatchObject({ killed: false, removed: true })
    expect(ev('cgroup').members).toBeGreaterThanOrEqual(301)
    expect(ev('exit')).toMatchObject({ code: 143, survivors: 0 })
  })

  it.skipIf(!can)('a cleanup helper the command starts on SIGTERM is left alone until the grace ends (the cgroup is frozen while signalled), three runs of 300 members', () => {
    for (let round = 0; round < 3; round++) {
      const helper = `trap "echo TERM >> $OUT/helper" TERM; sleep 2; echo done >> $OUT/helper`
      // The trap is set once the members are forked: dash's child of `sleep 1000 &` starts with its
      // parent's TERM handler and resets it only once it runs, so a SIGTERM landing in between (a
      // member not yet scheduled, on a busy machine) is taken for the parent's trap and lost; that
      // member then execs sleep and lives until the grace's cgroup.kill (killed: true, seen here once).
      const cmd = `${members(300)}
        trap 'sh -c "${helper.replace(/"/g, '\\"').replace(/\$OUT/g, '$OUT')}" & wait $!; exit 0' TERM
        touch $OUT/ready; wait` // (a trapped SIGTERM interrupts the wait at once: the helper starts right away)
      const { r, status, ev, out, events } = run(cmd, ['--grace', '10000'])
      const said = `round ${round}, the wrapper's events: ${JSON.stringify(events)}`
      expect(readFileSync(join(out, 'helper'), 'utf8'), said).toBe('done\n')
      expect(status, `${said}; stderr: ${r.stderr}`).toBe(0)
      expect(ev('cgroup'), said).toMatchObject({ freeze: 'frozen', killed: false, removed: true })
      expect(ev('escalate'), said).toBeUndefined()
    }
  })

  it.skipIf(!can || !isRoot)('a child that moved itself into another cgroup is stopped all the same once the command exits', () => {
    const other = testCgroup('reapkit-test-moved')
    const cmd = `sh -c 'echo $$ > "$1/cgroup.procs" && echo $$ > $OUT/moved.pid && touch $OUT/ready && exec sleep 1000' _ "${other}" &
      i=0; while [ ! -e $OUT/ready ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done; exit 0`
    const { r, status, procs, ev } = run(cmd, ['--grace', '3000'], { NO_TERM: '1' })
    expect(status, r.stderr).toBe(0)
    expect(procs.moved).toBe('gone')
    expect(ev('exit')).toMatchObject({ code: 0, outsideCgroup: 1 })
    expect(ev('escalate')).toBeUndefined() // the sleep obeyed the SIGTERM
    expect(ev('cgroup')).toMatchObject({ removed: true })
  })

  it.skipIf(!cgroup.available || !isRoot || spawnSync('setpriv', ['--version']).status !== 0)('where the cgroup cannot be made (not ours to write), the start event says why, not "--no-cgroup"', () => {
    const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', BIN, '--verbose', '--', 'true'], { encoding: 'utf8', timeout: 30_000 })
    expect(r.status, r.stderr).toBe(0)
    const start = r.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((e) => e.event === 'start')
    expect(start.cgroup).toBeNull()
    expect(start.cgroupReason).not.toBe('--no-cgroup')
    expect(start.cgroupReason).toMatch(/writable|owned|delegated|systemd/)
  })

  it.skipIf(!cgroup.available || !isRoot)('a parent cgroup named a"b\\c: the verbose events stay JSON and carry the path as it is', () => {
    const parent = testCgroup('reapkit-test-a"b\\c')
    const r = spawnSync('sh', ['-c', 'echo $$ > "$1/cgroup.procs" && exec "$2" --verbose -- true', '_', parent, BIN], { encoding: 'utf8', timeout: 30_000 })
    expect(r.status, r.stderr).toBe(0)
    const events = r.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)) // throws on a broken event
    const start = events.find((e) => e.event === 'start')
    expect(start.cgroup.startsWith(`${parent}/reapkit-`)).toBe(true)
    made.push(start.cgroup)
    expect(events.find((e) => e.event === 'cgroup')).toMatchObject({ path: start.cgroup, removed: true })
  })

  it.skipIf(!cgroup.available)('REAPKIT_CGROUP turns the cgroup off for 0, false, no and off (any case), not for 1 or yes', () => {
    const reason = (value: string) => {
      const r = spawnSync(BIN, ['--verbose', '--', 'true'], { encoding: 'utf8', env: { ...process.env, REAPKIT_CGROUP: value }, timeout: 30_000 })
      const start = r.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((e) => e.event === 'start')
      if (typeof start.cgroup === 'string') made.push(start.cgroup)
      return start.cgroupReason
    }
    for (const off of ['0', 'false', 'NO', 'Off']) expect(reason(off), off).toBe('--no-cgroup')
    for (const on of ['1', 'yes']) expect(reason(on), on).toBe('')
  })
})
