/**
 * EngineError, a file of its own: index.ts exports the class, and a class is loaded with reapkit
 * (a lazy class would change what `instanceof` and `extends` see), while the engine calls that
 * throw it (engine.ts) load only when a container is met.
 */
import { ReapkitError } from '../../ground/errors'

/** The engine's client failed: `stderr` says why, `exitCode` how (null when it could not be run at all). */
export class EngineError extends ReapkitError {
  readonly stderr: string
  readonly exitCode: number | null
  constructor(message: string, stderr: string, exitCode: number | null, cause?: unknown) {
    super('ERR_REAPKIT_ENGINE', message, cause === undefined ? undefined : { cause })
    this.name = 'EngineError'
    this.stderr = stderr
    this.exitCode = exitCode
  }
}
