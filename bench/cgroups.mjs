// The cgroups the benches make (Linux, cgroup v2 where ours to write), and the check that none is
// left behind. The wrapper (`reapkit --`) and spawn({ cgroup: true }) make theirs right under their
// own cgroup, which a child inherits: run.mjs moves itself into a fresh cgroup of its own first
// (enterBenchCgroup), so every cgroup a bench makes is made inside it, and whatever is still there
// at the end is a bench's leftover: a wrapper SIGKILLed cannot remove its own (that is what
// `reapkit doctor` lists). The check names them, removes them and fails the run. Other sessions'
// cgroups on a shared machine are never inside it, so none is ever mistaken for the bench's.
//
// A bench that has to SIGKILL a wrapper removes the wrapper's cgroups itself, found by the owner in
// their names (its pid namespace, pid and start time, read while it lives: ownerTag).
import { mkdirSync, readdirSync, readFileSync, readlinkSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const gone = (err) => err?.code === 'ENOENT' || err?.code === 'ESRCH'

/** The directory of this process's cgroup on the v2 hierarchy, or null (not Linux, no v2 mount). */
export function ownCgroupDir() {
  if (process.platform !== 'linux') return null
  try {
    const mount = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').find((l) => l.includes(' - cgroup2 ') && l.split(' ')[3] === '/')
    const own = /^0::(.*)$/m.exec(readFileSync('/proc/self/cgroup', 'utf8'))?.[1]
    if (!mount || own === undefined) return null
    const at = mount.split(' ')[4]
    return own === '/' ? at : join(at, own)
  } catch {
    return null
  }
}

/**
 * What a cgroup made by process `pid` carries in its name (`_<pidns>_<pid>_<start>_`, the pid as its
 * namespace sees it), read now, while it lives; null once it is gone.
 */
export function ownerTag(pid) {
  try {
    const ns = /\[(\d+)\]/.exec(readlinkSync(`/proc/${pid}/ns/pid`))?.[1]
    const nsPid = /^NSpid:.*\s(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1]
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
    return ns && nsPid && start ? `_${ns}_${nsPid}_${start}_` : null
  } catch (err) {
    if (gone(err)) return null
    throw err
  }
}

function cgroupsIn(dir) {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => join(dir, e.name))
  } catch (err) {
    if (gone(err)) return []
    throw err
  }
}

function populated(path) {
  try {
    return /^populated 1$/m.test(readFileSync(join(path, 'cgroup.events'), 'latin1'))
  } catch (err) {
    if (gone(err)) return false
    throw err
  }
}

/**
 * Kills what is left in each cgroup (cgroup.kill), waits (bounded) for it to empty, and removes it,
 * those inside it first; one removed meanwhile by its maker is done. Returns those it could not remove.
 */
export async function removeCgroups(paths) {
  const stuck = []
  for (const path of paths) {
    stuck.push(...(await removeCgroups(cgroupsIn(path))))
    try {
      if (populated(path)) writeFileSync(join(path, 'cgroup.kill'), '1')
    } catch (err) {
      if (!gone(err)) throw err
    }
    const deadline = Date.now() + 5000
    while (populated(path) && Date.now() < deadline) await sleep(10)
    try {
      rmdirSync(path)
    } catch (err) {
      if (!gone(err)) stuck.push(`${path}: ${err.message}`)
    }
  }
  return stuck
}

/** Removes the wrapper cgroups whose owner is `tag` (ownerTag) under our own cgroup; returns how many there were. */
export async function removeOwnedCgroups(tag) {
  const dir = ownCgroupDir()
  if (tag === null || dir === null) return 0
  const owned = cgroupsIn(dir).filter((p) => p.slice(dir.length + 1).startsWith('reapkit-') && p.includes(tag))
  const stuck = await removeCgroups(owned)
  if (stuck.length > 0) throw new Error(`bench: cgroups left behind: ${stuck.join('; ')}`)
  return owned.length
}

/**
 * Moves this process into a fresh cgroup `bench-<pid>` under its own, before anything makes one.
 * Returns `leftovers()`: (async) the cgroups still inside it once the benches are done, after a
 * bounded wait (waitMs, 10 s) for those still on their way out; each is removed, and the list says what was left.
 * `leave()` moves this process back and removes the bench's cgroup. Where no cgroup is ours to
 * make, `path` is null and `why` says why (the check is not made).
 */
export function enterBenchCgroup() {
  const own = ownCgroupDir()
  const none = (why) => ({ path: null, why, leftovers: async () => [], leave() {} })
  if (own === null) return none('no cgroup v2 hierarchy here')
  const path = join(own, `bench-${process.pid}`)
  try {
    mkdirSync(path)
  } catch (err) {
    return none(`cannot make ${path}: ${err.message}`)
  }
  try {
    writeFileSync(join(path, 'cgroup.procs'), String(process.pid))
  } catch (err) {
    rmdirSync(path)
    return none(`cannot move into ${path}: ${err.message}`)
  }
  let left = false
  const leave = () => {
    if (left) return
    left = true
    try {
      writeFileSync(join(own, 'cgroup.procs'), String(process.pid))
    } catch {
      return // (still in it: it goes when this process does not; nothing else can be done here)
    }
    try {
      rmdirSync(path)
    } catch (err) {
      if (err.code !== 'EBUSY') return
      // A process the run started is still in it (a straggler of a kill at exit): it is the
      // bench's, all of them are; cgroup.kill, then a short bounded wait for the kernel's word.
      try {
        writeFileSync(join(path, 'cgroup.kill'), '1')
        const until = Date.now() + 2000
        while (populated(path) && Date.now() < until) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10)
        rmdirSync(path)
      } catch {}
    }
  }
  process.on('exit', leave)
  return {
    path,
    why: null,
    async leftovers({ waitMs = 10_000 } = {}) {
      // Those on their way out (a wrapper still ending its stop) are given waitMs.
      const deadline = Date.now() + waitMs
      while (cgroupsIn(path).length > 0 && Date.now() < deadline) await sleep(50)
      const left = cgroupsIn(path).map((p) => `${p.slice(path.length + 1)} (${populated(p) ? 'populated' : 'empty'})`)
      const stuck = await removeCgroups(cgroupsIn(path))
      return stuck.length > 0 ? [...left, ...stuck.map((s) => `not removed: ${s}`)] : left
    },
    leave,
  }
}
