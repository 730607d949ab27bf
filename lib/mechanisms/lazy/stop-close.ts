/**
 * closeClient's part, loaded right after the first spawn() (../load-stops.ts). A policy, reached
 * from a mechanism only to be loaded early: nothing here calls it.
 *
 * Every file in lib/mechanisms/lazy/ has this shape: one namespace import and a function that returns it.
 * From source (vitest, tsc) it is just that. The bundle (scripts/build-parts.mjs) replaces the file
 * by one that requires the module's own part on the first call.
 */
import * as part from '../../policies/close'

export default function stopClosePart(): typeof part {
  return part
}
