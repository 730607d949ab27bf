/**
 * killProcessGracefully's part, loaded right after the first spawn() (../load-stops.ts).
 *
 * Every file in lib/mechanisms/lazy/ has this shape: one namespace import and a function that returns it.
 * From source (vitest, tsc) it is just that. The bundle (scripts/build-parts.mjs) replaces the file
 * by one that requires the module's own part on the first call.
 */
import * as part from '../kill'

export default function stopKillPart(): typeof part {
  return part
}
