/**
 * reapkit: exact process-lifecycle primitives for Node.js. See README.md for the overview.
 */
export { capabilities, type Capabilities, supervisorPath } from './native'
export { getpgid, setpgid, kill, killpg, type SignalOptions } from './signals'
export { setParentDeathSignal, getParentDeathSignal, setChildSubreaper, isChildSubreaper, reapAdopted } from './prctl'
export { openProcess, ProcessHandle, type ExitInfo, type OpenProcessOptions } from './handle'
export { watchExit, type ProcessTarget, type WatchExitOptions } from './exit'
export {
  watchParent,
  type ParentWatcher,
  type ParentExitInfo,
  type ParentWatchMechanism,
  type WatchParentOptions,
} from './parent'
export { spawn, spawnedInfo, type SpawnOptions, type SpawnedInfo } from './spawn'
export { killProcessGracefully, type KillOptions, type KillResult, type SignalSent } from './kill'
export { groupMembers } from './group'
export { createJob, type Job } from './job'
export { closeClient, type CloseClientOptions, type CloseReport } from './close'
export {
  Supervisor,
  type SupervisorOptions,
  type ProcessRecord,
  type ProcessStatus,
  type ShutdownReport,
} from './supervisor'
export {
  findOrphans,
  stopOrphans,
  stopOrphanTree,
  type DoctorReport,
  type FindOrphansOptions,
  type OrphanProcess,
  type OrphanTree,
  type StopOrphansOptions,
  type StoppedTree,
} from './doctor'
export { type Logger, silentLogger } from './logger'
export {
  createKeepalive,
  ShuttingDownError,
  SHUTTING_DOWN_JSONRPC_CODE,
  type Keepalive,
  type KeepaliveOptions,
  type KeepaliveState,
  type ShutdownReport as KeepaliveReport,
} from './keepalive'
export { ReapkitError, TimeoutError, AbortError, type SystemError } from './errors'
export type { SignalLike } from './validate'
