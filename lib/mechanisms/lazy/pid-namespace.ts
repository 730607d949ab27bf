/**
 * spawn()'s PID-namespace code (pid-namespace.ts: the refusals of `pidNamespace: true`, and the
 * wording of a refusal by the kernel or of a missing report pipe), loaded when a spawn first asks
 * for a namespace or fails in a way only it words: a plain spawn() never reads it. The shape of
 * every file here: see ./containers.ts.
 */
import * as part from '../pid-namespace'

export default function pidNamespacePart(): typeof part {
  return part
}
