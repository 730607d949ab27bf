/**
 * `reapkit doctor`'s words for containers (./doctor.ts prints them): the leaked ones, the ones
 * another host owns, the clients found in orphaned trees, the engines skipped, and after --stop
 * what became of each.
 */
import { section } from './section'
import type { ContainerReport, LeakedContainer, StoppedContainer } from '../index'

const short = (id: string): string => id.slice(0, 12)

function entry(c: LeakedContainer): string {
  const name = c.name ? `  ${c.name}` : ''
  const flags = [c.state, ...(c.autoRemove ? ['--rm'] : [])].join(', ')
  const owner = c.owner ? `; owner ${c.owner.hostname}/${c.owner.pid}` : ''
  const client = c.client ? `; client ${c.client.pid} in tree ${c.client.root}` : ''
  return `  ${c.engine} ${short(c.id)}${name}  ${c.image}  (${flags}${owner}${client})\n     ${c.why}\n`
}

/** The listing's container part (empty when there is nothing to say). */
export function humanContainers(report: ContainerReport): string {
  let out =
    section('Leaked containers: their reapkit owner is gone, or their client lost its host.', report.leaked, entry) +
    section("Containers whose owner cannot be judged here (another host's, or another PID namespace's; --stop leaves them alone):", report.foreign, entry)
  out += section('Container clients in the orphaned trees:', report.clients, (k) => `  ${k.engine} client ${k.pid} (tree ${k.root}): ${k.container ? `container ${short(k.container)}, ` : ''}${k.note}\n`)
  const skipped = report.engines.filter((e) => !e.answered)
  const asked = report.engines.filter((e) => e.answered).map((e) => e.engine)
  out += `Container engines asked: ${asked.length > 0 ? asked.join(', ') : 'none answered'}`
  if (skipped.length > 0) out += `; skipped: ${skipped.map((e) => `${e.engine} (${e.reason})`).join('; ')}`
  return `${out}\n`
}

/** One line per container --stop ended (or did not). */
export function stoppedContainerLines(results: StoppedContainer[]): string {
  let out = ''
  for (const r of results) {
    const what = { gone: 'gone', survived: 'STILL THERE', uncertain: 'UNCERTAIN (the engine did not answer)' }[r.state]
    out += `stopped container ${r.engine} ${short(r.id)}${r.name ? ` (${r.name})` : ''}: ${what}${r.error ? `: ${r.error}` : ''}\n`
  }
  return out
}
