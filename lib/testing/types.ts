/** A process found by a capture or timed by measureReap (reapkit/testing). */
export interface CapturedProcess {
  pid: number
  ppid: number
  pgid: number
  /** Milliseconds since it started, when it was found. */
  ageMs: number
  command: string
  /** The cgroup it was found in (one spawn({ cgroup: true }) made during the capture), when found through one. */
  cgroup?: string
}
