/**
 * Which container engine a program is, by its name alone. A file of its own because spawn() asks
 * on every call, while the rest of the container code (command.ts's parser and all it stands on)
 * loads only for a command this recognizes (lib/mechanisms/lazy/containers.ts).
 */
import { type ContainerEngine, ENGINES } from './grammar'

const MIN_NAME = Math.min(...ENGINES.map((name) => name.length))
const MAX_NAME = Math.max(...ENGINES.map((name) => name.length))

/** The engine named by a program path (any directory, `/` or `\`; `.exe` and case ignored), or null. */
export function engineOf(program: string): ContainerEngine | null {
  const start = Math.max(program.lastIndexOf('/'), program.lastIndexOf('\\')) + 1
  // spawn() asks for every command: a name no engine's length (with or without .exe) is none,
  // without the case folding below (a regular expression replace, most of this look's cost).
  const length = program.length - start
  if (length < MIN_NAME || length > MAX_NAME + 4) return null
  // ASCII case only (the C wrapper's strncasecmp): no Unicode folding makes another name one of ours
  const base = program.slice(start).replace(/[A-Z]+/g, (c) => c.toLowerCase())
  const name = base.endsWith('.exe') ? base.slice(0, -4) : base
  return (ENGINES as readonly string[]).includes(name) ? (name as ContainerEngine) : null
}
