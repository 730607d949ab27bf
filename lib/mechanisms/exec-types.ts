/**
 * The option types of exec(), execFile() and fork(): Node's own (@types/node), each with what
 * reapkit's spawn() adds. Node's overloads pick the type of stdout and stderr from `encoding`;
 * exec.ts repeats them over these types, so a call types as it does against node:child_process.
 */
import type {
  ExecFileOptions as NodeExecFileOptions,
  ExecOptions as NodeExecOptions,
  ForkOptions as NodeForkOptions,
} from 'node:child_process'
import type { SpawnOptions } from './spawn'

/** What reapkit's spawn() adds to Node's options (see SpawnOptions): a group, a death signal... */
export type ReapkitChildOptions = Pick<SpawnOptions, 'group' | 'parentDeathSignal' | 'container' | 'cgroup'>

/** Node's Buffer as its child_process types name it (NonSharedBuffer in @types/node 20.19+, Buffer before). */
export type OutputBuffer = ReturnType<typeof Buffer.alloc>

export interface ExecOptions extends NodeExecOptions, ReapkitChildOptions {}
export interface ExecOptionsWithStringEncoding extends ExecOptions {
  encoding?: BufferEncoding | undefined
}
export interface ExecOptionsWithBufferEncoding extends ExecOptions {
  encoding: 'buffer' | null
}

export interface ExecFileOptions extends NodeExecFileOptions, ReapkitChildOptions {}
export interface ExecFileOptionsWithStringEncoding extends ExecFileOptions {
  encoding?: BufferEncoding | undefined
}
export interface ExecFileOptionsWithBufferEncoding extends ExecFileOptions {
  encoding: 'buffer' | null
}

export interface ForkOptions extends NodeForkOptions, ReapkitChildOptions {
  /**
   * Hand the terminal's foreground to the child while it runs (see SpawnOptions.foreground).
   * Default false for fork(), unlike spawn(): a forked worker is no interactive job, and giving it
   * the terminal would take Ctrl-C from its host and make the host's own reads of the terminal wait.
   */
  foreground?: boolean
}
