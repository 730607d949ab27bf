/**
 * The end of a capture's survivors (captureProcesses, lib/testing.ts): its new cgroups first, by
 * `cgroup.kill` (every member at once, one forked meanwhile too, with no pid to race), then every
 * process still found, each pinned and re-checked by its start time before its SIGKILL, in a few
 * rounds (a parent killed in one round may have forked in between), each wait bounded.
 */
import { openProcess, type ProcessHandle } from '../index'
import { processRow, type ProcessRow } from '../mechanisms/proctable'
import { endFoundCgroup } from '../mechanisms/cgroup/end'
import { populatedState } from '../mechanisms/cgroup/list'
import type { CaptureScope } from './scope'
import type { CapturedProcess } from './types'

const ROUNDS = 3

/** SIGKILLs every survivor of `scope`, waits for each (bounded), reaps what was adopted; returns what it killed. */
export async function killSurvivors(scope: CaptureScope, killTimeoutMs: number): Promise<CapturedProcess[]> {
  const killed = await endNewCgroups(scope, killTimeoutMs)
  for (let round = 0; round < ROUNDS; round++) {
    const rows = scope.survivorsNow()
    if (rows.length === 0) break
    killed.push(...(await killPinned(scope, rows, killTimeoutMs)))
  }
  scope.reapOrphans()
  return killed
}

/** `cgroup.kill` of our populated new cgroups, then the kernel's `populated 0`, then their removal. */
async function endNewCgroups(scope: CaptureScope, killTimeoutMs: number): Promise<CapturedProcess[]> {
  const before = scope.survivorsNow()
  const populated = scope.newCgroups().filter((c) => {
    try {
      return populatedState(c.path) === 'populated'
    } catch {
      return false // unreadable: its members are still found by pid
    }
  })
  if (populated.length === 0) return []
  const ended = await Promise.all(populated.map((c) => endFoundCgroup(c, { confirmMs: killTimeoutMs })))
  const done = new Set(ended.filter((e) => e.killed).map((e) => e.path))
  return before.filter((row) => done.has(scope.cgroupOf(row.pid) ?? '')).map((row) => scope.captured(row))
}

/** One round: each row pinned, re-checked (the pid still names the process found), SIGKILLed through the pin, waited for. */
async function killPinned(scope: CaptureScope, rows: ProcessRow[], killTimeoutMs: number): Promise<CapturedProcess[]> {
  const killed: CapturedProcess[] = []
  const handles: ProcessHandle[] = []
  for (const row of rows) {
    let handle: ProcessHandle
    try {
      handle = openProcess(row.pid)
    } catch {
      continue // gone already
    }
    if (processRow(row.pid)?.start !== row.start) {
      handle.close()
      continue
    }
    try {
      handle.signal('SIGKILL')
      killed.push(scope.captured(row))
      handles.push(handle)
    } catch {
      handle.close()
    }
  }
  await Promise.all(handles.map((h) => exitedWithin(h, killTimeoutMs)))
  return killed
}

async function exitedWithin(h: ProcessHandle, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([h.exited, new Promise((r) => (timer = setTimeout(r, ms)))])
  } finally {
    clearTimeout(timer)
    h.close()
  }
}
