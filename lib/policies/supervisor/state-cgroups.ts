/**
 * The cgroups of a Supervisor's children (spawn({ cgroup: true })), as its state file records them:
 * each record names its child's cgroup by path and id (its directory's inode, the kernel's cgroup
 * id, never reused while it exists); a cgroup whose child exited but which is not removed yet (an
 * escapee holds it) stays in the file's top-level `cgroups`. A supervisor SIGKILLed with contained
 * children leaves their escapees (a setsid helper, a double-forked daemon) in those cgroups, out of
 * any process group: only the cgroup still holds them.
 *
 * The next incarnation on the file ends those cgroups, and only those: its own records, never a
 * walk of the hierarchy for every cgroup its predecessor's process made. That process may have run
 * other Supervisors on other files, whose children a live successor may have adopted: they are not
 * this file's to end.
 *
 * Each recorded cgroup is checked before it is acted on, on top of the file's own trust: a path
 * under the v2 mount with a reapkit name; its maker provably gone (mechanisms/cgroup/judge.ts: this
 * host, boot and PID namespace); still the recorded id; of this process's own uid. The end is
 * `cgroup.kill`, exact (no pid that could be recycled), then the kernel's `populated 0`, then the
 * removal (mechanisms/cgroup/end.ts).
 *
 * With onLeftovers 'adopt', an adopted child's cgroup is not ended: its members are moved into a
 * fresh cgroup made by (and named for) the successor, as spawn() makes one, and the emptied old one
 * is removed. A cgroup named for a gone maker would be doctor --stop's to end, the adopted child
 * with it. Where the move is refused (the successor may not write both cgroups; a cgroup with
 * cgroups inside it, or a member outside our PID namespace, is not moved either), the old one is
 * kept, logged, and recorded for the next incarnation: doctor's one remaining caveat
 * (docs/doctor.md).
 */
import { readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs'
import { basename, join, normalize } from 'node:path'
import { type Logger, logEvent } from '../../ground/logger'
import { endFoundCgroup, type EndedCgroup } from '../../mechanisms/cgroup/end'
import { cgroupOwnerVerdict } from '../../mechanisms/cgroup/judge'
import { type FoundCgroup, membersOf, populatedState, sameCgroup, subtreeOf } from '../../mechanisms/cgroup/list'
import { madeCgroupId, makeChildCgroup, removeWhenEmpty } from '../../mechanisms/cgroup/make'
import { parseCgroupName } from '../../mechanisms/cgroup/name'
import { cgroup2Mount, cgroupCapability } from '../../mechanisms/cgroup/where'

/** What the next incarnation did with one of its predecessor's cgroups (LeftoverReport.cgroups). */
export type LeftoverCgroup = EndedCgroup

/** A child's cgroup as the state file records it: its path and its id (the inode, in decimal). */
export interface RecordedCgroup {
  path: string
  id: string
}

const ID_RE = /^[1-9][0-9]{0,19}$/

/** A recorded cgroup read back from the file, or null when it is not one (a path outside the mount, a name reapkit does not give). */
export function parseRecordedCgroup(value: unknown): RecordedCgroup | null {
  const v = value as Partial<RecordedCgroup> | null
  if (typeof v !== 'object' || v === null || typeof v.path !== 'string' || typeof v.id !== 'string' || !ID_RE.test(v.id)) return null
  if (normalize(v.path) !== v.path || parseCgroupName(basename(v.path)) === null) return null
  return { path: v.path, id: v.id }
}

/**
 * The cgroup this copy of the library made for `pid` (spawn({ cgroup: true })), read from
 * /proc/PID/cgroup right after the spawn: null when the child is in no cgroup we made.
 */
export function cgroupOfChild(pid: number): RecordedCgroup | null {
  const mount = cgroup2Mount()
  if (process.platform !== 'linux' || mount === null) return null
  let line: string | undefined
  try {
    line = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').find((l) => l.startsWith('0::'))
  } catch {
    return null
  }
  if (!line || line.endsWith(' (deleted)')) return null
  const path = join(mount, line.slice(3))
  const id = madeCgroupId(path)
  return id === undefined ? null : { path, id: String(id) }
}

/** Whether the recorded cgroup still exists (its path still has its id): a removed one is dropped from the file. */
export function recordedCgroupExists(c: RecordedCgroup): boolean {
  try {
    return String(statSync(c.path, { bigint: true }).ino) === c.id
  } catch {
    return false
  }
}

/** The recorded cgroups that pass every check (see the file's comment), one listed inside another left out (ended with it). */
export function checkRecordedCgroups(recorded: readonly RecordedCgroup[], logger: Logger): FoundCgroup[] {
  const mount = cgroup2Mount()
  if (process.platform !== 'linux' || mount === null) return []
  const me = process.geteuid?.() ?? -1
  const found: FoundCgroup[] = []
  for (const c of recorded) {
    const owner = parseCgroupName(basename(c.path))
    if (owner === null || !c.path.startsWith(`${mount}/`)) continue
    const verdict = cgroupOwnerVerdict(owner)
    if (verdict.status !== 'gone') {
      logEvent(logger, 'warn', 'state.cgroup-not-judged', { path: c.path, status: verdict.status, why: verdict.why })
      continue
    }
    let st
    try {
      st = statSync(c.path, { bigint: true })
    } catch {
      continue // removed since: nothing of it is left
    }
    if (String(st.ino) !== c.id || Number(st.uid) !== me) continue // another cgroup at that path now, or not ours
    found.push({ path: c.path, name: basename(c.path), owner, id: st.ino, uid: me, inside: null })
  }
  const unique = found.filter((c, i) => found.findIndex((o) => o.path === c.path) === i)
  return unique.filter((c) => !unique.some((o) => c.path.startsWith(`${o.path}/`)))
}

/** Ends the checked cgroups; one result each. Never rejects. */
export async function endPredecessorCgroups(found: readonly FoundCgroup[], logger: Logger): Promise<LeftoverCgroup[]> {
  const results = await Promise.all(found.map((c) => endFoundCgroup(c)))
  for (const r of results) logEvent(logger, r.state === 'gone' ? 'info' : 'warn', 'state.cgroup-ended', { ...r })
  return results
}

/** How many passes a move makes at most over the old cgroup's members (a member may fork meanwhile). */
const MOVE_PASSES = 50

/**
 * An adopted child's cgroup (`old`, checked): its members moved into a fresh cgroup of the
 * successor's, the old one removed. The fresh one is removed once empty, as spawn()'s are. Returns
 * the fresh cgroup, or null when the move could not be made (logged; the old one is kept as it is).
 */
export function moveAdoptedCgroup(old: FoundCgroup, logger: Logger): RecordedCgroup | null {
  const fail = (why: string, fresh?: string): null => {
    if (fresh !== undefined) {
      // Back where they were, as far as that goes; the fresh one is removed once empty.
      for (const pid of membersOf(fresh)) if (pid > 0) writeQuietly(join(old.path, 'cgroup.procs'), pid)
      removeWhenEmpty(fresh)
    }
    logEvent(logger, 'warn', 'state.cgroup-kept', { path: old.path, reason: `holds an adopted process and could not be moved: ${why}` })
    return null
  }
  try {
    // A nested reapkit's cgroups inside it are that reapkit's: moving their members would undo its containment.
    if (subtreeOf(old.path).length > 1) return fail('it has cgroups inside it')
    const where = cgroupCapability()
    if (!where.available) return fail(where.reason!)
    const fresh = makeChildCgroup(where.path!)
    for (let pass = 0; pass < MOVE_PASSES; pass++) {
      if (sameCgroup(old) !== 'same') return fail('it changed meanwhile', fresh)
      const pids = membersOf(old.path)
      if (pids.length === 0 && populatedState(old.path) !== 'populated') break
      // A member outside our PID namespace is listed as 0, and "0" written to cgroup.procs would move the writer itself.
      if (pids.some((p) => p <= 0)) return fail('a member is outside this PID namespace', fresh)
      for (const pid of pids) {
        try {
          writeFileSync(join(fresh, 'cgroup.procs'), String(pid))
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ESRCH') return fail((err as Error).message, fresh)
        }
      }
      if (pass === MOVE_PASSES - 1) return fail('its members kept forking', fresh)
    }
    try {
      if (sameCgroup(old) === 'same') rmdirSync(old.path)
    } catch (err) {
      // Its members are moved: an empty cgroup left behind holds nothing (doctor removes it).
      logEvent(logger, 'warn', 'state.cgroup-not-removed', { path: old.path, error: (err as Error).message })
    }
    removeWhenEmpty(fresh)
    const id = madeCgroupId(fresh)
    logEvent(logger, 'info', 'state.cgroup-moved', { from: old.path, to: fresh })
    return id === undefined ? null : { path: fresh, id: String(id) }
  } catch (err) {
    return fail((err as Error).message)
  }
}

function writeQuietly(file: string, pid: number): void {
  try {
    writeFileSync(file, String(pid))
  } catch {
    // gone, or not ours to move back: it stays where it is
  }
}
