// The wrapper's stop of a large tree with escapees, many times (bench/escaped-tree.mjs's case): a
// tree of 1,000 paused processes, 100 of them setsid'd, under `reapkit --`, SIGTERM to the wrapper.
// Every process dies of SIGTERM, so a stop that reaches the SIGKILL phase missed one. The subreaper
// path (--no-cgroup) used to miss, a few rounds in twenty, an escapee re-parented to the wrapper
// after its first walk had read its children (its parent died of the group's SIGTERM meanwhile):
// that round took the whole grace (9 s). The cgroup path lists members from cgroup.procs and reads
// no /proc during the stop. Inside a private PID namespace (signals); the namespace, and all in
// it, dies with the script.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { canUnshare, DIST, ROOT } from '../helpers'
import { sized } from './size'

const BIN = join(ROOT, 'bin', 'reapkit')
const SCRIPT = join(__dirname, 'wrapper-tree.sh')
const ROUNDS = sized(20)
const dir = mkdtempSync(join(tmpdir(), 'reapkit-wrapper-tree-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const pauser = join(dir, 'pauser')
const built =
  process.platform === 'linux' &&
  (spawnSync('cc', ['-O2', '-static', '-o', pauser, join(ROOT, 'bench', 'fixtures', 'pauser.c')]).status === 0 ||
    spawnSync('cc', ['-O2', '-o', pauser, join(ROOT, 'bench', 'fixtures', 'pauser.c')]).status === 0)
const cgroup = process.platform === 'linux' && require(DIST).capabilities().cgroup.available

function rounds(options: string[]) {
  const r = spawnSync('unshare', ['--pid', '--kill-child', '--fork', '--mount-proc', 'sh', SCRIPT, BIN, pauser, '1000', '100', String(ROUNDS), dir, ...options], {
    encoding: 'utf8',
    timeout: ROUNDS * 40_000,
  })
  const lines = r.stdout.split('\n').filter((l) => l.startsWith('round '))
  expect(lines.length, r.stderr).toBe(ROUNDS)
  return lines.map((l) => {
    const f = l.split(' ')
    return { status: Number(f[3]), escalated: f[5] === '1', late: f[7] === '1', procReads: f[9] }
  })
}

describe.runIf(process.platform === 'linux' && canUnshare && built)('reapkit -- pauser tree 1000 100, SIGTERM', () => {
  it(`--no-cgroup (the subreaper): no round of ${ROUNDS} needs the SIGKILL; every process got its SIGTERM`, () => {
    const rs = rounds(['--no-cgroup'])
    expect(rs.filter((r) => r.escalated)).toEqual([])
    expect(rs.every((r) => r.status === 128 + 15)).toBe(true)
    console.log(`wrapper tree, subreaper: ${rs.filter((r) => r.late).length} of ${ROUNDS} rounds found a child re-parented after the first walk`)
  })

  it.skipIf(!cgroup)(`the cgroup: no round of ${ROUNDS} needs the SIGKILL, and none reads /proc during its stop`, () => {
    const rs = rounds([])
    expect(rs.filter((r) => r.escalated)).toEqual([])
    expect(rs.every((r) => r.status === 128 + 15 && r.procReads === '0')).toBe(true)
  })
})
