/**
 * spawn() on Windows (spawn-win32.ts: the kill-on-close Job launcher), loaded on the first spawn
 * there and never elsewhere. The shape and the bundle's treatment: lazy/containers.ts.
 */
import * as part from '../spawn-win32'

export default function win32SpawnPart(): typeof part {
  return part
}
