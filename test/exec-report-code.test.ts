// The exec helper's report read by spawn() (native/exec_report.cc): execReportWaitCode packs in one
// int32 what execReportWait returns as an object, and exec-report.ts unpacks it. Written here into
// real report pipes, byte for byte as native/exec_helper.c writes them, and read by both: the same
// report for every shape (success, a failure record with its step and errno, the PID namespace
// init's /proc word, a timeout before EOF).
import { writeSync } from 'node:fs'
import { constants as osConstants, endianness } from 'node:os'
import { describe, expect, it } from 'vitest'
import { nativeBinding } from '../lib/ground/native'
import { unpackReport } from '../lib/mechanisms/exec-report'

const posix = process.platform !== 'win32'

/** A failure record: 'F', the step's letter, 2 bytes, the errno (int32, this machine's byte order). */
function failure(step: string, errno: number): Buffer {
  const record = Buffer.alloc(8)
  record.write('F', 0)
  record.write(step, 1)
  if (endianness() === 'LE') record.writeInt32LE(errno, 4)
  else record.writeInt32BE(errno, 4)
  return record
}

/** Both readings of one report: `bytes` written into a fresh pipe, its write end closed unless `keepOpen`. */
function readBoth(bytes: Buffer, keepOpen = false) {
  const binding = nativeBinding()!
  const read = (wait: (fd: number) => unknown) => {
    const [r, w] = binding.execReportPipe()
    if (bytes.length > 0) writeSync(w, bytes)
    if (!keepOpen) binding.execReportClose(w)
    try {
      return wait(r)
    } finally {
      if (keepOpen) {
        binding.execReportClose(w)
        binding.execReportClose(r) // not closed by a wait that timed out
      }
    }
  }
  const object = read((fd) => binding.execReportWait(fd, keepOpen ? 30 : 5000))
  const packed = read((fd) => unpackReport(binding.execReportWaitCode!(fd, keepOpen ? 30 : 5000)))
  return { object, packed }
}

describe.runIf(posix)('the packed exec report', () => {
  it('is the addon\'s here', () => {
    expect(typeof nativeBinding()?.execReportWaitCode).toBe('function')
  })

  const cases: Array<[string, Buffer, boolean, object]> = [
    ['success: R, then EOF', Buffer.from('R'), false, { ready: true, done: true, step: null, errno: 0 }],
    ['the helper gone before R (EOF alone)', Buffer.alloc(0), false, { ready: false, done: true, step: null, errno: 0 }],
    ['a failed exec (ENOENT)', Buffer.concat([Buffer.from('R'), failure('e', 2)]), false, { ready: true, done: true, step: 'exec', errno: 2 }],
    ['a failed cgroup join before R (EACCES)', failure('c', 13), false, { ready: false, done: true, step: 'cgroup', errno: 13 }],
    ['a failed setpgid (EPERM)', failure('g', 1), false, { ready: false, done: true, step: 'setpgid', errno: 1 }],
    ['the init mounted its /proc (p)', Buffer.from('Rp'), false, { ready: true, done: true, step: null, errno: 0, ownProc: true }],
    ['the init could not (o), then a failed fork', Buffer.concat([Buffer.from('Ro'), failure('f', 11)]), false, { ready: true, done: true, step: 'fork', errno: 11, ownProc: false }],
    ['the user-namespace route (u) before p', Buffer.from('Rup'), false, { ready: true, done: true, step: null, errno: 0, ownProc: true }],
    ['a large errno (ENOTRECOVERABLE)', failure('n', 131), false, { ready: false, done: true, step: 'unshare', errno: 131 }],
    ['R, then no EOF within the bound', Buffer.from('R'), true, { ready: true, done: false, step: null, errno: 0 }],
    ['nothing within the bound', Buffer.alloc(0), true, { ready: false, done: false, step: null, errno: 0 }],
  ]
  it.each(cases)('%s: the same report either way', (_name, bytes, keepOpen, expected) => {
    const { object, packed } = readBoth(bytes, keepOpen)
    expect(object).toEqual(expected)
    expect(packed).toEqual(object)
  })

  // Review: the packed errno has 15 bits; a record with a negative or larger one (not our helper's,
  // whose fail() never sends 0: a changed wire or another writer) became another, positive errno.
  it.each([
    ['a negative errno', -5],
    ['an errno past 15 bits', 40_000],
    ['errno 0', 0],
  ] as const)('%s in a failure record reads as EIO, never as another error or none', (_name, errno) => {
    const { packed } = readBoth(Buffer.concat([Buffer.from('R'), failure('e', errno)]), false)
    expect(packed).toEqual({ ready: true, done: true, step: 'exec', errno: osConstants.errno.EIO })
  })
})
