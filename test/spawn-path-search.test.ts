// spawn()'s PATH look-up (spawn-args.ts, resolveLikeExecvp), done by the addon in one call
// (native/exec_report.cc, execvpSearch) where it has it: the same answer as the JavaScript walk it
// replaced, on real files, and no answer kept from one spawn to the next (a file added earlier on
// PATH, or removed, between two spawns changes what the next one runs, as for execvp).
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { spawn } from '../lib/index'
import { nativeBinding } from '../lib/ground/native'
import { resolveLikeExecvp } from '../lib/mechanisms/spawn-args'
import { exitOf, trackGroup } from './helpers'

const linux = process.platform === 'linux'
const dir = mkdtempSync(join(tmpdir(), 'reapkit-path-search-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function script(path: string, text: string, mode = 0o755): void {
  writeFileSync(path, `#!/bin/sh\n${text}\n`)
  chmodSync(path, mode)
}

/** resolveLikeExecvp with the addon's walk hidden: the JavaScript walk, for comparison. */
function inJs(command: string, options: Parameters<typeof resolveLikeExecvp>[1]): string | null {
  const binding = nativeBinding() as unknown as Record<string, unknown>
  const search = binding.execvpSearch
  binding.execvpSearch = undefined
  try {
    return resolveLikeExecvp(command, options)
  } finally {
    binding.execvpSearch = search
  }
}

describe.runIf(linux)('the PATH look-up in one native call', () => {
  it('is the addon\'s here (else this file tests the JavaScript walk against itself)', () => {
    expect(typeof nativeBinding()?.execvpSearch).toBe('function')
  })

  it('gives the JavaScript walk\'s answer: skipped entries, empty and relative ones, a loop that stops it', () => {
    const at = (name: string) => join(dir, name)
    for (const d of ['d-dir', 'd-noexec', 'd-good', 'd-later', 'd-loop', 'cwd', 'cwd/rel']) mkdirSync(at(d), { recursive: true })
    mkdirSync(at('d-dir/rk-ps')) // a directory: skipped
    script(at('d-noexec/rk-ps'), 'echo noexec', 0o644) // no x bit: skipped
    script(at('d-good/rk-ps'), 'echo good')
    script(at('d-later/rk-ps'), 'echo later')
    symlinkSync(at('d-loop/rk-ps'), at('d-loop/rk-ps')) // ELOOP: execvp stops there
    script(at('cwd/rel/rk-ps'), 'echo rel')
    script(at('cwd/rk-ps'), 'echo dot')
    const cwd = at('cwd')
    const cases: Array<[string, string | undefined]> = [
      [`${at('d-dir')}:${at('d-noexec')}:${at('d-good')}:${at('d-later')}`, undefined],
      [`${at('d-missing')}:${at('d-later')}`, undefined],
      [`${at('d-dir')}:${at('d-noexec')}:${at('d-dir')}:${at('d-later')}`, undefined], // an entry repeated (looked at once)
      [`${at('d-loop')}:${at('d-good')}`, undefined], // the bare name: the helper's execvp stops with ELOOP
      [`${at('d-dir')}::${at('d-good')}`, cwd], // an empty entry is the cwd
      [`${at('d-dir')}:`, cwd], // so is a trailing one
      ['', cwd], // and an empty PATH
      [`rel:${at('d-good')}`, cwd], // a relative entry, under the child's cwd
      [`rel:${at('d-good')}`, 'rel'], // a relative cwd (cwd/rel/rel holds nothing)
      [`${at('d-dir')}:${at('d-noexec')}`, undefined], // none
    ]
    const answers = cases.map(([PATH, c]) => {
      const options = { env: { PATH }, cwd: c === 'rel' ? join(cwd, 'rel') : c }
      return [resolveLikeExecvp('rk-ps', options), inJs('rk-ps', options)]
    })
    for (const [native, js] of answers) expect(native).toBe(js)
    expect(answers.map(([native]) => native)).toEqual([
      at('d-good/rk-ps'),
      at('d-later/rk-ps'),
      at('d-later/rk-ps'),
      'rk-ps',
      `${cwd}/./rk-ps`,
      `${cwd}/./rk-ps`,
      `${cwd}/./rk-ps`,
      `${cwd}/rel/rk-ps`,
      at('d-good/rk-ps'),
      null,
    ])
  })

  // Review: a repeated entry is looked at once, but each entry was compared with every earlier one
  // (20,000 entries: 252 ms, growing with their square). Every entry distinct, the file in the last.
  it('a PATH of 100,000 entries costs its walk, not its square, and finds the file in the last', () => {
    mkdirSync(join(dir, 'd-last'), { recursive: true })
    script(join(dir, 'd-last', 'rk-far'), 'echo far')
    const entries = Array.from({ length: 100_000 }, (_, i) => `/nonexistent-${i}`)
    const env = { PATH: [...entries, join(dir, 'd-last')].join(':') }
    const t0 = performance.now()
    const found = resolveLikeExecvp('rk-far', { env, cwd: dir })
    expect(performance.now() - t0).toBeLessThan(5000) // ~0.2 s here; the square took over 10 s
    expect(found).toBe(join(dir, 'd-last', 'rk-far'))
  })

  it('keeps no answer between spawns: a file added earlier on PATH runs next, and after its removal the later one again', async () => {
    const [early, late] = [join(dir, 'early'), join(dir, 'late')]
    mkdirSync(early)
    mkdirSync(late)
    script(join(late, 'rk-which2'), 'echo late')
    const env = { ...process.env, PATH: `${early}:${late}` }
    const run = async (): Promise<string> => {
      const child = spawn('rk-which2', [], { env, stdio: ['ignore', 'pipe', 'ignore'] })
      trackGroup(child.pid!)
      let out = ''
      child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d))
      await exitOf(child)
      return out.trim()
    }
    expect(await run()).toBe('late')
    script(join(early, 'rk-which2'), 'echo early')
    expect(await run()).toBe('early')
    unlinkSync(join(early, 'rk-which2'))
    expect(await run()).toBe('late')
    unlinkSync(join(late, 'rk-which2'))
    const gone = spawn('rk-which2', [], { env, stdio: 'ignore' })
    const error = await new Promise<NodeJS.ErrnoException>((resolve) => gone.once('error', resolve))
    expect(error.code).toBe('ENOENT') // Node's own spawn reports it, as for any command not found
  })
})
