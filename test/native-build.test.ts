// The kqueue backend (macOS, the BSDs) cannot run here, but it must at least compile: every native
// source is compiled in kqueue mode (REAPKIT_FORCE_KQUEUE, as against a kqueue compatibility
// library on Linux) with a stub <sys/event.h> that only declares the API. Syntax and types only;
// the macOS jobs of .github/workflows/prebuild.yml run the real thing.
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from './helpers'

const cxx = process.env.CXX || 'c++'
const haveCompiler = spawnSync(cxx, ['--version'], { stdio: 'ignore' }).status === 0

describe.runIf(haveCompiler && process.platform === 'linux')('native sources', () => {
  // REAPKIT_FORCE_DARWIN_PROC also compiles native/proc_darwin.cc (libproc, macOS only) against the
  // stub <libproc.h> and <sys/proc_info.h> of the same folder.
  it('compile with the kqueue backend selected (stub <sys/event.h>, <libproc.h>; compile only)', () => {
    const napiHeaders = require('node-api-headers').include_dir as string
    const addonApi = require('node-addon-api').include_dir as string
    const sources = readdirSync(join(ROOT, 'native')).filter((f) => f.endsWith('.cc'))
    const r = spawnSync(
      cxx,
      [
        '-std=c++17', '-fsyntax-only', '-fno-exceptions', '-Wall', '-Wextra', '-Wno-unused-parameter', '-Werror',
        '-DNAPI_VERSION=8', '-DNAPI_DISABLE_CPP_EXCEPTIONS', '-DNODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS',
        '-DREAPKIT_FORCE_KQUEUE', '-DREAPKIT_HAVE_SYS_EVENT_H=1', '-DREAPKIT_FORCE_DARWIN_PROC',
        `-I${join(ROOT, 'test', 'kqueue-stub')}`, `-I${napiHeaders}`, `-I${join(ROOT, addonApi)}`,
        ...sources.map((f) => join(ROOT, 'native', f)),
      ],
      { encoding: 'utf8', timeout: 120_000 },
    )
    expect(r.status, r.stderr).toBe(0)
  })

  it('the native supervisor compiles with the kqueue parent watch and without Linux-only calls (compile only)', () => {
    const cc = process.env.CC || 'cc'
    const r = spawnSync(
      cc,
      ['-std=c99', '-D_POSIX_C_SOURCE=200809L', '-D_DEFAULT_SOURCE', '-fsyntax-only', '-Wall', '-Wextra', '-Werror',
        '-DREAPKIT_FORCE_KQUEUE', `-I${join(ROOT, 'test', 'kqueue-stub')}`,
        ...readdirSync(join(ROOT, 'native', 'supervise')).filter((f) => f.endsWith('.c')).map((f) => join(ROOT, 'native', 'supervise', f))],
      { encoding: 'utf8', timeout: 60_000 },
    )
    expect(r.status, r.stderr).toBe(0)
  })
})
