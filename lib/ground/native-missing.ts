/**
 * What reapkit says when its addon is not there: why it did not load (the loader's error, what the
 * package carries, what the install step did) and which guarantees run on a fallback instead.
 * Only the failure path and capabilities() read this: a loaded addon never costs a look here.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** What scripts/install-addon.js recorded when it could not give this package an addon. */
interface InstallReport {
  status: 'no-toolchain' | 'build-failed'
  missing?: string[]
  why?: string
  log?: string
  platform?: string
  node?: string
}

function readInstallReport(root: string): InstallReport | null {
  try {
    const report = JSON.parse(readFileSync(join(root, 'build', 'reapkit-install.json'), 'utf8')) as InstallReport
    return report && typeof report.status === 'string' ? report : null
  } catch {
    return null
  }
}

/** The prebuilds the package carries, as `linux-x64 (glibc, musl)`: read from prebuilds/. */
function carriedPrebuilds(root: string): string[] {
  const out: string[] = []
  let dirs: string[] = []
  try {
    dirs = readdirSync(join(root, 'prebuilds')).sort()
  } catch {
    return out
  }
  for (const dir of dirs) {
    let files: string[] = []
    try {
      files = readdirSync(join(root, 'prebuilds', dir)).filter((f) => f.endsWith('.node'))
    } catch {
      continue // prebuilds/README.md
    }
    if (files.length === 0) continue
    // prebuildify's tags: reapkit.node (none), reapkit.glibc.node, reapkit.musl.node, napi...
    const tags = [...new Set(files.flatMap((f) => f.split('.').slice(1, -1)).filter((t) => t === 'glibc' || t === 'musl'))]
    out.push(tags.length > 0 ? `${dir} (${tags.join(', ')})` : dir)
  }
  return out
}

/** What the install step did, in one sentence, for the loader's error and the warning. */
function installStory(report: InstallReport | null): string {
  if (!report) {
    return "reapkit's install script, which builds the addon where no prebuild fits, has not run here " +
      "(--ignore-scripts skips it, so does a denial in npm 11's allowScripts, and pnpm 10 and Bun run it only once approved)."
  }
  if (report.status === 'no-toolchain') {
    return `reapkit's install script could not build the addon: ${(report.missing ?? []).join(', ')} not found on PATH.`
  }
  return `reapkit's install script could not build the addon: ${report.why ?? 'the build failed'}${report.log ? ` (node-gyp's output: ${report.log})` : ''}.`
}

/**
 * Why no addon loaded: `summary` (one sentence, for the warning) and `message` (the whole story:
 * the loader's error, what the package carries, what the install step did, how to get the addon).
 */
export function explainLoadFailure(root: string, cause: Error): { summary: string; message: string } {
  const here = `${process.platform}-${process.arch}`
  const notFound = /^No native build was found/.test(cause.message)
  const found = notFound ? `no prebuilt addon fits ${here} here` : `the addon does not load here (${cause.message.split('\n')[0]!.trim()})`
  const install = installStory(readInstallReport(root))
  const carried = carriedPrebuilds(root)
  const carries = carried.length > 0 ? `This copy of the package carries prebuilds for ${carried.join('; ')}.` : 'This copy of the package carries no prebuilds.'
  const howTo =
    'To get the addon: install Python 3, make and a C/C++17 compiler (Debian, Ubuntu: apt-get install python3 make g++; ' +
    'Alpine: apk add python3 make g++; macOS: xcode-select --install), allow reapkit\'s install script ' +
    '(npm 11: npm install-scripts approve reapkit; pnpm: pnpm approve-builds; Bun: trustedDependencies) and run `npm rebuild reapkit`.'
  return {
    summary: `${found[0]!.toUpperCase()}${found.slice(1)}, and ${install}`,
    message: `${cause.message.trimEnd()}. ${carries} ${install} ${howTo}`,
  }
}

/** The capabilities missingGuarantees() reads. */
interface CapsSeen {
  native: boolean
  pidfd: boolean
  pdeathsig: boolean
  subreaper: boolean
  kqueue: boolean
  exitWatch: string
  parentWatch: string
  job: boolean
  supervisor: boolean
}

/**
 * The guarantees this platform has but this process runs without, each as `name: what happens
 * instead` (capabilities().missing); [] when nothing is missing. A guarantee the platform never
 * has (a death signal on macOS) is not "missing".
 */
export function missingGuarantees(c: CapsSeen, platform: NodeJS.Platform = process.platform): string[] {
  const linux = platform === 'linux'
  const windows = platform === 'win32'
  const kqueuePlatform = platform === 'darwin' || /bsd$/.test(platform)
  const out: string[] = []
  if (linux && !c.pdeathsig) {
    out.push('parentDeathSignal: spawn() arms none, so a child outlives this process if it is SIGKILLed; setParentDeathSignal() throws ENOTSUP')
  }
  if (windows && !c.job) {
    out.push('job: spawn() starts children outside a kill-on-close Job object, so their descendants can outlive this process; createJob() throws ENOTSUP')
  }
  if (c.exitWatch === 'poll' && (linux || windows || kqueuePlatform)) {
    out.push(
      'exitWatch: watchExit() and process handles poll (every 100 ms by default, REAPKIT_EXIT_POLL_MS) instead of a kernel event, ' +
        'and learn no exit status of a process that is not a ChildProcess',
    )
    out.push('pinnedHandle: openProcess() holds no pidfd/handle: it signals by pid after checking that the pid still runs, so a pid recycled in between can be hit')
  }
  if (c.parentWatch === 'poll' && (linux || windows || kqueuePlatform)) {
    out.push('parentWatch: watchParent() polls the parent (every 2 s by default, REAPKIT_PARENT_POLL_INTERVAL_MS) instead of a kernel event')
  }
  if (!c.native && !windows) {
    out.push('processGroups: getpgid(), setpgid() and killpg() throw ENOTSUP (spawn() still gives a child its own group, through setsid)')
  }
  if (linux && !c.subreaper) out.push('subreaper: setChildSubreaper() and reapAdopted() throw ENOTSUP')
  if (!c.supervisor) out.push('supervisor: the `reapkit` command and supervisorPath() need the native supervisor shipped beside the addon')
  return out
}
