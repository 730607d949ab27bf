/**
 * reapkit: exact process-lifecycle primitives for Node.js. See README.md for the overview.
 */
// The published .d.ts name Node's types (child_process, http, NodeJS.*): this makes them load in a
// project that lists no global types (`"types": []`, TypeScript 7's default), as @types packages do.
/// <reference types="node" preserve="true" />
export { supervisorCommand as supervisorPath } from './ground/native'
export { capabilities, type Capabilities, type CgroupCapability, type PidNamespaceCapability } from './mechanisms/cgroup/capabilities'
export { getpgid, setpgid, kill, killpg, type SignalOptions } from './ground/signals'
export { setParentDeathSignal, getParentDeathSignal, setChildSubreaper, isChildSubreaper, reapAdopted } from './mechanisms/prctl'
export { openProcess, ProcessHandle, type ExitInfo, type OpenProcessOptions } from './mechanisms/handle'
export { watchExit, type ProcessTarget, type WatchExitOptions } from './mechanisms/exit'
export {
  watchParent,
  type ParentWatcher,
  type ParentExitInfo,
  type ParentWatchMechanism,
  type WatchParentOptions,
} from './mechanisms/parent'
export { spawn, spawnedInfo, type SpawnOptions, type SpawnedInfo } from './mechanisms/spawn'
export { exec, execFile } from './mechanisms/exec'
export { fork } from './mechanisms/fork'
export type {
  ExecOptions,
  ExecOptionsWithStringEncoding,
  ExecOptionsWithBufferEncoding,
  ExecFileOptions,
  ExecFileOptionsWithStringEncoding,
  ExecFileOptionsWithBufferEncoding,
  ForkOptions,
} from './mechanisms/exec-types'
export { killProcessGracefully, type KillOptions, type KillResult, type SignalSent } from './mechanisms/kill'
export type { ContainerEngine } from './mechanisms/container/command'
export type { ContainerOutcome, ContainerRecord } from './mechanisms/container/stop'
export type { ContainerResult } from './mechanisms/container/child'
export { EngineError } from './mechanisms/container/engine-error'
export { groupMembers } from './mechanisms/group'
export { createJob, type Job } from './mechanisms/job'
export { closeClient, type CloseClientOptions, type CloseReport } from './policies/close'
export {
  Supervisor,
  type SupervisorOptions,
  type SupervisedSpawnOptions,
  type SupervisorEvents,
  type ProcessRecord,
  type ProcessStatus,
  type Incarnation,
  type ShutdownReport,
  type StopReport,
  type StopReason,
  type StartError,
} from './policies/supervisor/supervisor'
export type { ReadinessOptions } from './policies/supervisor/readiness'
export type { OutputSource } from './policies/supervisor/output-source'
export { httpProbe, type HttpProbeOptions } from './policies/supervisor/probes'
export type { RestartPolicy, RestartOptions, BackoffOptions, IntensityOptions, StartReason } from './policies/supervisor/restart'
export type { SupervisorMetrics, DurationHistogram } from './policies/supervisor/metrics'
export type { HealthOptions, HealthCheckContext } from './policies/supervisor/health'
export { registerSupervisorMetrics, type PrometheusOptions, type SupervisorPrometheusOptions, type PrometheusRegistry } from './policies/supervisor/prometheus'
export { openControlSocket, type ControlSocket, type ControlSocketOptions, type ControlRow, type ControlSnapshot } from './policies/supervisor/control'
export type { OutputOptions, OutputReadOptions, OutputPage, OutputStream } from './policies/supervisor/output'
export {
  findOrphans,
  type DoctorReport,
  type FindOrphansOptions,
  type OrphanProcess,
  type OrphanTree,
} from './policies/doctor/doctor'
export { stopOrphans, stopOrphanTree, type StopOrphansOptions, type StoppedTree } from './policies/doctor/stop'
export {
  findLeakedContainers,
  type ContainerReport,
  type EngineScan,
  type FindLeakedContainersOptions,
  type LeakedContainer,
  type OrphanedClient,
} from './policies/doctor/containers'
export { stopLeakedContainer, stopLeakedContainers, type StopContainersOptions, type StoppedContainer } from './policies/doctor/containers-stop'
export type { ContainerOwner } from './mechanisms/container/owner'
export {
  findLeakedCgroups,
  stopLeakedCgroup,
  stopLeakedCgroups,
  type CgroupMember,
  type CgroupReport,
  type FindLeakedCgroupsOptions,
  type LeakedCgroup,
  type StopCgroupsOptions,
  type StoppedCgroup,
} from './policies/doctor/cgroups'
export type { CgroupOwner } from './mechanisms/cgroup/name'
export { type Logger, silentLogger } from './ground/logger'
export { createKeepalive, type KeepaliveMetrics } from './policies/keepalive/keepalive'
export {
  ShuttingDownError,
  SHUTTING_DOWN_JSONRPC_CODE,
  type Keepalive,
  type KeepaliveOptions,
  type KeepaliveState,
  type ShutdownReport as KeepaliveReport,
} from './policies/keepalive/types'
export { registerKeepaliveMetrics } from './policies/keepalive/prometheus'
export { ReapkitError, TimeoutError, AbortError, type SystemError } from './ground/errors'
export type { SignalLike } from './ground/validate'
