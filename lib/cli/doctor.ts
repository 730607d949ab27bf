/**
 * `reapkit doctor`: lists the process trees whose stdio host is gone (see lib/policies/doctor/doctor.ts for the
 * criterion) and the leaked containers (lib/policies/doctor/containers.ts), and with --stop stops them. bin/reapkit runs this with node. Exit status: 0 none
 * found (or, with --stop, everything listed is gone), 1 found (or something survived the stop, or
 * containers were asked for and no engine answered), 2 usage error or a stop refused.
 */
import { createInterface } from 'node:readline'
import { humanCgroups, stoppedCgroupLines } from './doctor-cgroups'
import { humanContainers, stoppedContainerLines } from './doctor-containers'
import { zombieLine } from './doctor-zombies'
import {
  type CgroupReport,
  type ContainerEngine,
  type ContainerReport,
  type DoctorReport,
  findLeakedCgroups,
  findLeakedContainers,
  findOrphans,
  type OrphanProcess,
  stopLeakedCgroups,
  stopLeakedContainers,
  stopOrphans,
  type StoppedTree,
} from '../index'

const USAGE = `Usage: reapkit doctor [--json] [--path DIR]... [--all-users] [--[no-]containers] [--engine E]... [--label L]...
                      [--stop [--yes] [--grace-ms N]]

Lists every process tree whose stdio host is gone: stdin a pipe nobody can write to any more and
stdout a pipe nobody reads (asked of the kernel: /proc on Linux, libproc on macOS; never by name).
Lists apart the leaked containers: those whose reapkit.owner label names a process that is gone,
and the container of a docker/podman run client in such a tree, where it can be told exactly,
and the leftover cgroups of spawn({ cgroup: true }): named for a reapkit process that is gone,
with their members (your own uid's; --all-users lists others' apart, never stops them).
Signals nothing unless --stop.

  --json          machine-readable output
  --path DIR      also show files each process holds open under DIR (repeatable)
  --all-users     every user's processes (root only); default: yours. Another user's container
                  client is trusted for nothing: its engine is asked by doctor's own client, run
                  as that user with a clean environment; its --cidfile is never opened
  --engine E      ask only these container engines: docker, podman, nerdctl (repeatable; default all)
  --label L       only containers that also carry label L, KEY or KEY=VALUE (repeatable)
  --containers    containers only: the process table is not read, no process is signalled
  --no-containers processes only: no container engine is asked
  --stop          stop each listed tree (SIGTERM, then SIGKILL after the grace), each leaked
                  container (the engine's stop with the grace, then its kill; confirmed gone)
                  and each leftover cgroup (cgroup.kill; confirmed empty, then removed)
  --yes           stop without asking (required for --stop without a terminal)
  --grace-ms N    grace between SIGTERM and SIGKILL (default 5000)

Exit status: 0 none found (after --stop: all gone), 1 found (after --stop: some survived, or
with --containers or --engine: no engine answered, so nothing could be checked), 2 usage.
`

interface Args {
  json: boolean
  paths: string[]
  allUsers: boolean
  stop: boolean
  yes: boolean
  graceMs: number | undefined
  engines: ContainerEngine[]
  labels: string[]
  containersOnly: boolean
  noContainers: boolean
}

function usageError(message: string): never {
  process.stderr.write(`reapkit doctor: ${message}\n\n${USAGE}`)
  process.exit(2)
}

function parse(argv: string[]): Args {
  const args: Args = { json: false, paths: [], allUsers: false, stop: false, yes: false, graceMs: undefined, engines: [], labels: [], containersOnly: false, noContainers: false }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const value = (): string => {
      const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i]
      if (v === undefined || v === '') usageError(`${a} needs a value`)
      return v
    }
    const name = a.includes('=') ? a.slice(0, a.indexOf('=')) : a
    if (name === '--json') args.json = true
    else if (name === '--all-users') args.allUsers = true
    else if (name === '--stop') args.stop = true
    else if (name === '--yes' || name === '-y') args.yes = true
    else if (name === '--path') args.paths.push(value())
    else if (name === '--label') args.labels.push(value())
    else if (name === '--containers') args.containersOnly = true
    else if (name === '--no-containers') args.noContainers = true
    else if (name === '--engine') {
      const v = value()
      if (v !== 'docker' && v !== 'podman' && v !== 'nerdctl') usageError(`--engine must be docker, podman or nerdctl, not ${JSON.stringify(v)}`)
      args.engines.push(v)
    }
    else if (name === '--grace-ms') {
      const v = value()
      if (!/^\d+$/.test(v) || Number(v) > 600_000) usageError(`--grace-ms must be a whole number of milliseconds up to 600000, not ${JSON.stringify(v)}`)
      args.graceMs = Number(v)
    } else if (name === '--help' || name === '-h') {
      process.stdout.write(USAGE)
      process.exit(0)
    } else usageError(`unknown argument ${JSON.stringify(a)}`)
  }
  if (args.allUsers && process.getuid?.() !== 0) usageError('--all-users needs root (other users\' fd tables cannot be read otherwise)')
  if (args.noContainers && (args.containersOnly || args.engines.length > 0 || args.labels.length > 0)) usageError('--no-containers asks no engine: --containers, --engine and --label do not apply')
  if (args.containersOnly && (args.allUsers || args.paths.length > 0)) usageError('--all-users and --path read processes; --containers reads none')
  if (!args.stop && (args.yes || args.graceMs !== undefined)) usageError('--yes and --grace-ms only apply with --stop')
  return args
}

function bytes(n: number): string {
  if (n >= 1024 ** 3) return `${(n / 1024 ** 3).toFixed(1)} GiB`
  if (n >= 1024 ** 2) return `${(n / 1024 ** 2).toFixed(1)} MiB`
  return `${Math.round(n / 1024)} KiB`
}

function age(ms: number): string {
  const s = Math.floor(ms / 1000)
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor(s / 60) % 60).padStart(2, '0')}m`
  return `${Math.floor(s / 86400)}d${String(Math.floor(s / 3600) % 24).padStart(2, '0')}h`
}

function clip(command: string, width = 70): string {
  return command.length > width ? `${command.slice(0, width - 1)}…` : command
}

function line(p: OrphanProcess, prefix: string, detailPrefix: string): string {
  let out = `${prefix}${p.pid}  ${clip(p.command)}  (age ${age(p.ageMs)}, ${bytes(p.rssBytes)})\n`
  if (p.holds.length > 0) out += `${detailPrefix}holds: ${p.holds.join(', ')}\n`
  out += `${detailPrefix}${p.evidence}\n`
  return out
}

/** The tree drawn by ppid links; members reached only through the group come last under the root. */
function drawTree(processes: OrphanProcess[]): string {
  const byPid = new Map(processes.map((p) => [p.pid, p]))
  const children = new Map<number, OrphanProcess[]>()
  const root = processes[0]!
  for (const p of processes.slice(1)) {
    const parent = byPid.has(p.ppid) ? p.ppid : root.pid
    children.set(parent, [...(children.get(parent) ?? []), p])
  }
  let out = ''
  const walk = (p: OrphanProcess, indent: string, last: boolean, top: boolean): void => {
    const branch = top ? '  ' : `${indent}${last ? '└─ ' : '├─ '}`
    const below = top ? '  ' : `${indent}${last ? '   ' : '│  '}`
    out += line(p, branch, `${below}   `)
    const kids = children.get(p.pid) ?? []
    kids.forEach((k, i) => walk(k, below, i === kids.length - 1, false))
  }
  walk(root, '', true, true)
  return out
}

function summary(report: DoctorReport): string {
  const n = report.trees.length
  const procs = report.trees.reduce((s, t) => s + t.processes.length, 0)
  const rss = report.trees.reduce((s, t) => s + t.rssBytes, 0)
  if (n === 0) return `No orphaned servers (${report.scanned} processes checked in ${Math.round(report.durationMs)} ms).`
  return `${n} orphaned server${n === 1 ? '' : 's'}, ${procs} process${procs === 1 ? '' : 'es'}, ${bytes(rss)}`
}

const NO_PROCESSES: DoctorReport = { trees: [], reparented: [], zombies: [], unreadable: 0, scanned: 0, durationMs: 0 }

const NO_CONTAINERS: ContainerReport = { engines: [], leaked: [], foreign: [], clients: [] }

/** What one run of doctor found: the process trees (none with --containers) and the containers. */
interface Found {
  report: DoctorReport
  containers: ContainerReport
  /** --containers: the process table was not read. */
  containersOnly: boolean
  /** Containers were asked for (--containers, or --engine) and no engine answered: no all-clear can be given. */
  unchecked: boolean
  /** The leftover cgroups (none read with --containers). */
  cgroups: CgroupReport
}

const NO_CGROUPS: CgroupReport = { checked: false, leaked: [], foreign: [], otherUsers: [], truncated: false, unreadable: 0 }

/**
 * Whether the containers asked for could not be checked at all. Only when they were asked for
 * (--containers, --engine): a plain `doctor` on a machine whose docker daemon is not running
 * checks the processes, and says which engines it skipped.
 */
function uncheckedContainers(args: Args, containers: ContainerReport): boolean {
  if (args.noContainers || !(args.containersOnly || args.engines.length > 0)) return false
  return containers.engines.every((e) => !e.answered)
}

function containerSummary(containers: ContainerReport, unchecked: boolean): string {
  const n = containers.leaked.length
  if (unchecked) return 'Nothing could be checked: no container engine answered.'
  return n === 0 ? 'No leaked containers.' : `${n} leaked container${n === 1 ? '' : 's'}`
}

function human({ report, containers, containersOnly, unchecked, cgroups }: Found): string {
  if (containersOnly) return `${humanContainers(containers)}${containerSummary(containers, unchecked)}\n`
  let out = ''
  if (report.trees.length > 0) {
    out += 'Orphaned servers: nobody can write to their stdin or read their stdout any more (pipe or socket peers gone).\n\n'
    for (const tree of report.trees) out += `${drawTree(tree.processes)}\n`
  }
  if (report.reparented.length > 0 || report.zombies.length > 0) {
    out += 'Other leftovers (listed only; --stop leaves them alone):\n'
    for (const p of report.reparented) out += line(p, '  ', '     ')
    out += zombieLine(report.zombies) // one line: zombies are not servers to stop
    out += '\n'
  }
  if (report.unreadable > 0) out += `(${report.unreadable} processes of other users not examined; run as root with --all-users to include them)\n`
  out += humanCgroups(cgroups)
  if (containers !== NO_CONTAINERS) out += humanContainers(containers)
  const n = cgroups.leaked.length
  const cgroupLine = n > 0 ? `${n} leftover cgroup${n === 1 ? '' : 's'}\n` : ''
  return `${out}${containers.leaked.length > 0 || unchecked ? `${containerSummary(containers, unchecked)}\n` : ''}${cgroupLine}${summary(report)}\n`
}

function stopLines(results: StoppedTree[]): string {
  let out = ''
  for (const r of results) {
    out += `stopped tree ${r.root}: ${r.signalled.length} process${r.signalled.length === 1 ? '' : 'es'} signalled${r.escalated ? ', SIGKILL after the grace' : ''}`
    if (r.skipped.length > 0) out += `; not signalled: ${r.skipped.map((s) => `${s.pid} (${s.reason})`).join(', ')}`
    if (r.survivors.length > 0) out += `; STILL ALIVE: ${r.survivors.join(', ')}`
    out += '\n'
  }
  return out
}

function ask(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr })
  return new Promise((resolve) => {
    rl.question(question, (answer) => {
      resolve(/^y(es)?$/i.test(answer.trim())) // before close(), whose event answers no
      rl.close()
    })
    rl.on('close', () => resolve(false))
  })
}

async function find(args: Args): Promise<Found> {
  const report = args.containersOnly ? NO_PROCESSES : await findOrphans({ allUsers: args.allUsers, paths: args.paths })
  const engines = args.engines.length > 0 ? args.engines : undefined // all
  const containers = args.noContainers ? NO_CONTAINERS : await findLeakedContainers({ trees: report.trees, labels: args.labels, engines })
  const cgroups = args.containersOnly ? NO_CGROUPS : await findLeakedCgroups({ allUsers: args.allUsers })
  return { report, containers, containersOnly: args.containersOnly, unchecked: uncheckedContainers(args, containers), cgroups }
}

const json = (found: Found, extra: object = {}): string =>
  `${JSON.stringify(found.containersOnly ? { containers: found.containers, ...extra } : { ...found.report, containers: found.containers, cgroups: found.cgroups, ...extra }, null, 2)}\n`

/** Asks on the terminal before a --stop without --yes; a status to exit with when it must not go on. */
async function confirmStop({ report, containers, cgroups }: Found, yes: boolean): Promise<number | null> {
  if (yes) return null
  if (!process.stdin.isTTY) {
    process.stderr.write('reapkit doctor: refusing to --stop without a terminal to confirm on; pass --yes to stop what is listed\n')
    return 2
  }
  const procs = report.trees.reduce((s, t) => s + t.processes.length, 0)
  const what = [...(report.trees.length > 0 ? [`${report.trees.length} trees (${procs} processes)`] : []), ...(containers.leaked.length > 0 ? [`${containers.leaked.length} containers`] : []), ...(cgroups.leaked.length > 0 ? [`${cgroups.leaked.length} cgroups`] : [])]
  if (await ask(`Stop these ${what.join(' and ')}? [y/N] `)) return null
  process.stderr.write('Nothing stopped.\n')
  return 1
}

async function main(): Promise<number> {
  const args = parse(process.argv.slice(2))
  const found = await find(args)
  const listed = found.report.trees.length + found.containers.leaked.length + found.cgroups.leaked.length
  if (!args.stop || listed === 0) {
    process.stdout.write(args.json ? json(found) : human(found))
    return listed > 0 || found.unchecked ? 1 : 0
  }
  if (!args.json) process.stdout.write(human(found))
  const refused = await confirmStop(found, args.yes)
  if (refused !== null) return refused
  // The trees, the containers and the cgroups at once: a client's SIGTERM and its container's engine stop do not wait on each other.
  const [results, containerResults, cgroupResults] = await Promise.all([
    stopOrphans(found.report, { graceMs: args.graceMs }),
    stopLeakedContainers(found.containers, { graceMs: args.graceMs }),
    stopLeakedCgroups(found.cgroups),
  ])
  const survived = results.some((r) => r.survivors.length > 0) || containerResults.some((r) => r.state !== 'gone') || cgroupResults.some((r) => r.state !== 'gone')
  process.stdout.write(args.json ? json(found, { stopped: results, stoppedContainers: containerResults, stoppedCgroups: cgroupResults }) : stopLines(results) + stoppedContainerLines(containerResults) + stoppedCgroupLines(cgroupResults))
  return survived ? 1 : 0
}

// `reapkit doctor | head`: a reader that leaves early is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0)
  throw err
})

main().then(
  (code) => {
    process.exitCode = code
  },
  (err: Error & { code?: string }) => {
    process.stderr.write(`reapkit doctor: ${err.message}\n`)
    process.exitCode = err.code === 'ERR_INVALID_ARG_TYPE' || err.code === 'ERR_OUT_OF_RANGE' ? 2 : 1
  },
)
