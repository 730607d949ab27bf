/**
 * killProcessGracefully and its types. The stop itself is in ./stop/ (kill.ts composes its steps);
 * this path stays the one the rest of the library imports.
 */
export { killProcessGracefully } from './stop/kill'
export type { KillGroupResult, KillOptions, KillResult, Pinned, SignalSent } from './stop/types'
