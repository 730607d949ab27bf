/**
 * Which container engine a program is, by its name alone. A file of its own because spawn() asks
 * on every call, while the rest of the container code (command.ts's parser and all it stands on)
 * loads only for a command this recognizes (lib/mechanisms/lazy/containers.ts).
 */

export type ContainerEngine = 'docker' | 'podman' | 'nerdctl'

/** The engine named by a program path (any directory, `/` or `\`; `.exe` and case ignored), or null. */
export function engineOf(program: string): ContainerEngine | null {
  const base = program.slice(Math.max(program.lastIndexOf('/'), program.lastIndexOf('\\')) + 1).toLowerCase()
  const name = base.endsWith('.exe') ? base.slice(0, -4) : base
  return name === 'docker' || name === 'podman' || name === 'nerdctl' ? name : null
}
