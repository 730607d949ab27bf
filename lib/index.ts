/**
 * reapkit: exact process-lifecycle primitives for Node.js. See README.md for the overview.
 */
export { capabilities, type Capabilities } from './native'
export { getpgid, setpgid, kill, killpg, type SignalOptions } from './signals'
export { setParentDeathSignal, getParentDeathSignal, setChildSubreaper, isChildSubreaper } from './prctl'
export { openProcess, ProcessHandle, type ExitInfo, type OpenProcessOptions } from './handle'
export { watchExit, type ProcessTarget, type WatchExitOptions } from './exit'
export {
  watchParent,
  type ParentWatcher,
  type ParentExitInfo,
  type ParentWatchMechanism,
  type WatchParentOptions,
} from './parent'
export { ReapkitError, TimeoutError, AbortError, type SystemError } from './errors'
export type { SignalLike } from './validate'
