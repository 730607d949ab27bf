/**
 * spawn({ pidNamespace: true }) (Linux): the child's whole tree ends when this process dies by any
 * means, SIGKILL included, done by the kernel. What Windows' kill-on-close Job object gives every
 * child there (spawn-win32.ts), and `reapkit --isolate` gives the command it wraps.
 *
 * The exec helper (native/exec_helper.c, native/exec_pidns.c) makes a new PID namespace and stays
 * outside it as the child this process sees (child.pid), with the parent-death signal SIGKILL; a
 * small init of ours, PID 1 of the namespace, runs the command as PID 2. When this process dies the
 * kernel kills the helper, then the init, and a namespace whose init dies has every process in it
 * killed: setsid'd helpers and double-forked daemons included, which a process group misses.
 *
 * What changes for the program: it sees itself as pid 2 (its init as 1; getppid() 1), its own
 * /proc where the system lets us mount one, a session of its own (no controlling terminal), and,
 * on the unprivileged route (not root: a user namespace first, where the system allows one), the
 * same uid and gid but its other groups as the overflow group, and no setgroups. When it exits,
 * whatever it left running in its namespace is SIGKILLed at once (as in a container).
 *
 * This file: the refusals checked before any syscall, the capability probe, and the wording of a
 * refusal by the kernel. Never silently weaker: where it cannot be had, spawn() throws (or emits
 * 'error' for a refusal only the kernel can tell), and capabilities().pidNamespace says so first.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { systemError, typeError } from '../ground/errors'
import { execHelperPath } from '../ground/native'
import { describe, type SignalLike, signalNumber } from '../ground/validate'

/** node:os's constants, read when first needed: node:os is not loaded with reapkit (about 0.1 ms). */
function constants(): typeof import('node:os').constants {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('node:os') as typeof import('node:os')).constants
}

/** Whether spawn({ pidNamespace: true }) works here, how, and if not, why. */
export interface PidNamespaceCapability {
  available: boolean
  /** The unprivileged route (a user namespace that maps this uid and gid only), not root's. */
  userNamespace?: boolean
  /** Why it is not available. */
  reason?: string
}

const WHAT_IT_NEEDS =
  'a new PID namespace needs root (CAP_SYS_ADMIN), or unprivileged user namespaces ' +
  '(user.max_user_namespaces > 0; kernel.unprivileged_userns_clone=1 on Debian kernels before 5.10; ' +
  'kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 23.10+; not blocked by a seccomp profile)'

/**
 * The option checks, before any syscall: what spawn() cannot do with a PID namespace throws here.
 * `explicitSignal` is the caller's parentDeathSignal as given (undefined: left out).
 */
export function refusePidNamespace(opts: { explicitSignal: SignalLike | false | null | undefined; asOtherUser: boolean }): void {
  const { explicitSignal, asOtherUser } = opts
  if (explicitSignal !== undefined && (explicitSignal === false || explicitSignal === null || signalNumber(explicitSignal, { allowZero: false }) !== 9)) {
    throw typeError(
      'ERR_INVALID_ARG_VALUE',
      `The "parentDeathSignal" option must be 'SIGKILL' (or left out) with "pidNamespace": the kernel's SIGKILL of the helper is what ends the namespace. Received ${describe(explicitSignal)}`,
    )
  }
  if (process.platform !== 'linux') throw systemError('ENOTSUP', 'spawn', 'pidNamespace: PID namespaces exist on Linux only')
  if (asOtherUser) {
    throw systemError('ENOTSUP', 'spawn', 'pidNamespace cannot be combined with uid/gid: the exec helper would run as that user, who may not reach it')
  }
  if (execHelperPath() === null) {
    throw systemError('ENOTSUP', 'spawn', 'pidNamespace needs the exec helper (reapkit-exec), which this build lacks: see capabilities().loadError')
  }
}

/**
 * A `podman run` would make its container's mounts (its network namespace) inside the namespace's
 * private mount table, where no other podman, ours included at the stop, can reach them: refused,
 * as `reapkit --isolate` refuses it (docker's and nerdctl's clients only talk to their daemon).
 */
export function podmanRefused(): Error {
  return systemError('ENOTSUP', 'spawn', 'pidNamespace cannot run podman: its mounts would be made where no other podman can reach them. Leave pidNamespace out: the container is stopped through podman on every stop path')
}

/** spawnThroughHelper() could not start the helper with its report pipe: never a weaker spawn. */
export function noReportPipe(addonLoaded: boolean): Error {
  if (!addonLoaded) {
    return systemError('ENOTSUP', 'spawn', 'pidNamespace needs the native addon (its report pipe), which did not load: see capabilities().loadError; the child was not started')
  }
  return systemError('EMFILE', 'spawn', 'pidNamespace: no report pipe for the exec helper (out of file descriptors?), so the child was not started')
}

/** A refusal by the kernel (step 'unshare'): Node's error says EPERM; this says what it needs. */
export function explainRefusal(err: Error & { pidNamespace?: boolean }): void {
  err.message = `${err.message}: the kernel refused a new PID namespace (${WHAT_IT_NEEDS}); the command never ran`
  err.pidNamespace = true
}

let probed: PidNamespaceCapability | undefined

/**
 * Tries it once (a few ms, on the first read of capabilities().pidNamespace): the helper, asked for
 * a namespace, execs this very Node by its absolute path (`node --version`: no PATH, no /bin/sh,
 * which a distroless image lacks). The kernel's answer, not a guess from sysctls (AppArmor, seccomp
 * and container runtimes each refuse in their own way); and the route, as the helper says it took
 * it on its report ('u' after 'R': a user namespace first), not as a uid map looks (inside a user
 * namespace of someone else's, root's route maps a partial range too).
 */
export function pidNamespaceCapability(): PidNamespaceCapability {
  if (probed) return { ...probed }
  probed = probe()
  return { ...probed }
}

function probe(): PidNamespaceCapability {
  if (process.platform !== 'linux') return { available: false, reason: 'PID namespaces exist on Linux only' }
  const helper = execHelperPath()
  if (helper === null) return { available: false, reason: 'the exec helper (reapkit-exec) is missing' }
  // GROUP 0, SIGNAL 9, PARENT 0 (no re-check: we wait for it), the report on fd 3.
  const r = spawnSync(helper, ['--pid-namespace', '0', '9', '0', '3', process.execPath, 'node', '--version'], {
    encoding: 'latin1',
    timeout: 10_000,
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  })
  const report = String(r.output?.[3] ?? '')
  if (r.status === 0 && report.startsWith('R')) return { available: true, userNamespace: report[1] === 'u' }
  const said = failure(report) ?? ((r.stderr || '').trim() || (r.error ? r.error.message : `exit ${r.status ?? r.signal}`))
  return { available: false, reason: `${said}: ${WHAT_IT_NEEDS}` }
}

/** The helper's failure record on the report ('F', step, 2 bytes, int32 errno), worded. */
function failure(report: string): string | null {
  const at = report.indexOf('F')
  if (at < 0 || report.length < at + 8) return null
  const bytes = Buffer.from(report.slice(at, at + 8), 'latin1')
  const errno = bytes.readInt32LE(4)
  const step = { n: 'unshare(CLONE_NEWPID)', f: 'fork', e: 'exec', p: 'prctl(PR_SET_PDEATHSIG)' }[String.fromCharCode(bytes[1]!)] ?? 'the exec helper'
  const name = Object.entries(constants().errno).find(([, n]) => n === errno)?.[0] ?? `errno ${errno}`
  return `${step} failed: ${name}`
}

/** How many PID namespaces deep a process is (the fields of NSpid in its status), or null (gone, or no NSpid before Linux 4.1). */
export function pidNamespaceDepth(pid: number | 'self'): number | null {
  try {
    const line = /^NSpid:\s*(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return line ? line[1]!.trim().split(/\s+/).length : null
  } catch {
    return null
  }
}
