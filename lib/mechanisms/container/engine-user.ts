/**
 * An engine call made for another user's container client runs as that user (doctor, as root,
 * acting on an orphan of someone else's): with the uid, gid and supplementary groups the client
 * process itself had (their `docker` group membership is what reached the daemon; never more than
 * it had), through util-linux's `setpriv`, which then execs the engine's client in place (same
 * pid: a bound's SIGKILL reaches it). Node's own `uid`/`gid` options cannot do it: libuv drops
 * every supplementary group. And in a session of its own, through util-linux's `setsid` (which,
 * as we start it as no group's leader, calls setsid() and execs in place): in our session the
 * user's code could open our controlling terminal, read what root types and push keystrokes into
 * root's shell (execFile has no `detached`).
 *
 * So whatever the call reads of theirs (their ~/.docker, containers.conf, a socket of their
 * choosing) it reads with their rights, never ours. What program runs, and with which environment,
 * is still the caller's choice (doctor's own client, a clean environment): see
 * policies/doctor/client-user.ts.
 */

/** Whom an engine call runs as, and the setpriv that makes it so. */
export interface EngineUser {
  uid: number
  gid: number
  /** The supplementary groups, as the client process had them. */
  groups: readonly number[]
  /** setpriv's and setsid's absolute paths (the caller's own). */
  setpriv: string
  setsid: string
}

/** The program and argv that run `bin argv` as `user`. */
export function commandAs(user: EngineUser, bin: string, argv: readonly string[]): { file: string; args: string[] } {
  const groups = user.groups.length > 0 ? `--groups=${user.groups.join(',')}` : '--clear-groups'
  return { file: user.setsid, args: ['--', user.setpriv, `--reuid=${user.uid}`, `--regid=${user.gid}`, groups, '--', bin, ...argv] }
}
