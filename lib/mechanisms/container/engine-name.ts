/**
 * Which container engine a program is, by its name alone. A file of its own because spawn() asks
 * on every call, while the rest of the container code (command.ts's parser and all it stands on)
 * loads only for a command this recognizes (lib/mechanisms/lazy/containers.ts).
 */
import { type ContainerEngine, ENGINES } from './grammar'

/** The engine named by a program path (any directory, `/` or `\`; `.exe` and case ignored), or null. */
export function engineOf(program: string): ContainerEngine | null {
  // ASCII case only (the C wrapper's strncasecmp): no Unicode folding makes another name one of ours
  const base = program.slice(Math.max(program.lastIndexOf('/'), program.lastIndexOf('\\')) + 1).replace(/[A-Z]+/g, (c) => c.toLowerCase())
  const name = base.endsWith('.exe') ? base.slice(0, -4) : base
  return (ENGINES as readonly string[]).includes(name) ? (name as ContainerEngine) : null
}
