import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach } from 'vitest'
import { type Keepalive, type ProcessRecord, Supervisor, type SupervisorOptions } from '../lib/index'
import { killChildren, trackGroup, waitFor } from './helpers'

/**
 * The supervisors and scratch folders a test file makes: each test pushes its own (or makes them
 * with `supervise` and `tempDir`), and they are shut down (every child stopped) and removed after
 * it, pass or fail.
 */
export function cleanupAfterEach() {
  const made = { supervisors: [] as Supervisor[], dirs: [] as string[] }
  afterEach(async () => {
    for (const sup of made.supervisors.splice(0)) {
      await sup.shutdownAll()
      sup.dispose()
    }
    for (const dir of made.dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })
  /** A supervisor whose every incarnation is tracked for cleanup, and the names of its typed events in order. */
  const supervise = (options: SupervisorOptions = {}) => {
    const sup = new Supervisor({ graceMs: 2000, closeTimeoutMs: 300, backstop: false, ...options })
    made.supervisors.push(sup)
    const events: string[] = []
    sup.on('spawn', (_r, child) => {
      trackGroup(child.pid!)
      events.push('spawn')
    })
    for (const name of ['exit', 'restart', 'give-up', 'terminate', 'escalate'] as const) sup.on(name, () => events.push(name))
    return { sup, events }
  }
  /** A fresh scratch folder, removed after the test. */
  const tempDir = (prefix: string): string => {
    const dir = mkdtempSync(join(tmpdir(), prefix))
    made.dirs.push(dir)
    return dir
  }
  return { ...made, supervise, tempDir }
}

/** Waits (bounded) until the record `id` has `status`. */
export const settled = (sup: Supervisor, id: string, status: ProcessRecord['status'], ms = 20_000) =>
  waitFor(() => sup.get(id)?.status === status, ms, `${id} to be ${status}`)

/**
 * The plain children (outside any group the shared cleanup knows) and the keepalives a test file's
 * tests make: each test adds its own, and after it, pass or fail, the keepalives are disposed and
 * the children SIGKILLed.
 */
export function childrenAfterEach() {
  const made = { children: new Set<ChildProcess>(), keepalives: new Set<Keepalive>() }
  afterEach(async () => {
    for (const k of made.keepalives) k.dispose()
    made.keepalives.clear()
    await killChildren(made.children)
  })
  return made
}
