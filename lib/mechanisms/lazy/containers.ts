/**
 * spawn()'s container part (a `docker|podman|nerdctl run` it recognizes: container/child.ts and all
 * it stands on, node:crypto included), loaded when spawn() first meets such a command.
 *
 * Every file in lib/mechanisms/lazy/ has this shape: one namespace import and a function that returns it.
 * From source (vitest, tsc) it is just that. The bundle (scripts/build-parts.mjs) replaces the file
 * by one that requires the module's own part (dist/cjs/parts/<this file's name>.js) on the first
 * call, so require('reapkit') neither reads nor compiles it.
 */
import * as part from '../container/child'

export default function containerPart(): typeof part {
  return part
}
