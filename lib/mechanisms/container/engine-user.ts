/**
 * An engine call made for another user's container client runs as that user (doctor, as root,
 * acting on an orphan of someone else's): with that user's uid, primary group and supplementary
 * groups (their `docker` group membership is what reached the daemon), through util-linux's
 * `setpriv`, which then execs the engine's client in place (same pid: a bound's SIGKILL reaches
 * it). Node's own `uid`/`gid` options cannot do it: libuv drops every supplementary group.
 *
 * So whatever the call reads of theirs (their ~/.docker, containers.conf, a socket of their
 * choosing) it reads with their rights, never ours. What program runs, and with which environment,
 * is still the caller's choice (doctor's own client, a clean environment): see
 * policies/doctor-client-user.ts.
 */

/** Whom an engine call runs as, and the setpriv that makes it so. */
export interface EngineUser {
  uid: number
  gid: number
  /** The user's name in the password database, or null when it has none (then no supplementary group). */
  name: string | null
  /** setpriv's absolute path (the caller's own). */
  setpriv: string
}

/** The program and argv that run `bin argv` as `user`. */
export function commandAs(user: EngineUser, bin: string, argv: readonly string[]): { file: string; args: string[] } {
  const groups = user.name !== null ? '--init-groups' : '--clear-groups'
  return { file: user.setpriv, args: [`--reuid=${user.uid}`, `--regid=${user.gid}`, groups, '--', bin, ...argv] }
}
