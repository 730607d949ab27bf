// The wrapper's owner label names the machine (issue 28 item 4): `.../pidns:<inode>/mid:<machine id>`,
// from /etc/machine-id, else D-Bus's /var/lib/dbus/machine-id, else `mid:-`; a file counts only when
// it holds exactly 32 lowercase hex digits (a newline at most after them). Each case runs the real
// wrapper in a private mount namespace where both files are bind-mounted over with the case's own
// contents; the client is a stand-in `docker` that records the argv of its `run`.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { canUnshare, machineIdField, ROOT } from './helpers'

const BIN = join(ROOT, 'bin', 'reapkit')
const FILES = ['/etc/machine-id', '/var/lib/dbus/machine-id']
const canBind = canUnshare && FILES.every((f) => existsSync(f))

describe('the wrapper\'s owner label: the machine', () => {
  it('is the sixth field, this machine\'s id as the test reads it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'reapkit-mid-'))
    try {
      const out = join(dir, 'run.args')
      writeFileSync(join(dir, 'docker'), `#!/bin/sh\n[ "$1" = run ] && printf '%s\\n' "$@" > ${JSON.stringify(out)}\nexit 0\n`, { mode: 0o755 })
      const r = spawnSync(BIN, ['--', join(dir, 'docker'), 'run', '-i', 'img'], { encoding: 'utf8', timeout: 30_000 })
      expect(r.status, r.stderr).toBe(0)
      const label = readFileSync(out, 'utf8').split('\n').find((a) => a.startsWith('reapkit.owner='))!
      const fields = label.slice('reapkit.owner='.length).split('/')
      expect(fields, label).toHaveLength(process.platform === 'linux' ? 6 : 4)
      if (process.platform === 'linux') expect(fields[5]).toBe(machineIdField())
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe.runIf(canBind)('the wrapper\'s owner label: which machine-id file counts (private mount namespace)', () => {
  const A = randomBytes(16).toString('hex')
  const B = randomBytes(16).toString('hex')
  let dir = ''
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'reapkit-mid-ns-'))
    writeFileSync(join(dir, 'docker'), `#!/bin/sh\n[ "$1" = run ] && printf '%s\\n' "$@" > "$RUN_ARGS"\nexit 0\n`, { mode: 0o755 })
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  /** The machine field of the label the wrapper writes with these as /etc/machine-id and /var/lib/dbus/machine-id. */
  function midWith(etc: string, dbus: string): string {
    writeFileSync(join(dir, 'etc'), etc)
    writeFileSync(join(dir, 'dbus'), dbus)
    const out = join(dir, 'run.args')
    rmSync(out, { force: true })
    const script = 'mount --bind "$1" /etc/machine-id && mount --bind "$2" /var/lib/dbus/machine-id && exec "$3" -- "$4" run -i img'
    const r = spawnSync('unshare', ['--mount', 'sh', '-c', script, 'sh', join(dir, 'etc'), join(dir, 'dbus'), BIN, join(dir, 'docker')], {
      env: { ...process.env, RUN_ARGS: out },
      encoding: 'utf8',
      timeout: 30_000,
    })
    expect(r.status, r.stderr).toBe(0)
    const label = readFileSync(out, 'utf8').split('\n').find((a) => a.startsWith('reapkit.owner='))!
    const fields = label.split('/')
    expect(fields, label).toHaveLength(6)
    return fields[5]!
  }

  it.each<[string, string, string, () => string]>([
    ['systemd\'s, with its newline', `${A}\n`, `${B}\n`, () => `mid:${A}`],
    ['systemd\'s, without a newline', A, `${B}\n`, () => `mid:${A}`],
    ['D-Bus\'s when systemd\'s is "uninitialized" (a first boot)', 'uninitialized\n', `${B}\n`, () => `mid:${B}`],
    ['D-Bus\'s when systemd\'s is empty', '', B, () => `mid:${B}`],
    ['D-Bus\'s when systemd\'s is upper case', `${A.toUpperCase()}\n`, `${B}\n`, () => `mid:${B}`],
    ['D-Bus\'s when systemd\'s has more after its newline', `${A}\n\n`, `${B}\n`, () => `mid:${B}`],
    ['D-Bus\'s when systemd\'s is 31 digits', `${A.slice(1)}\n`, `${B}\n`, () => `mid:${B}`],
    ['none when neither holds one (one too long: 64 digits, more than is read)', `${A}${A}\n`, ` ${B}\n`, () => 'mid:-'],
    ['none when both are empty', '', '', () => 'mid:-'],
  ])('%s', (_what, etc, dbus, expected) => expect(midWith(etc, dbus)).toBe(expected()))
})
