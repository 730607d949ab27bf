// What the control socket tests share: running the real `reapkit` launcher (bin/reapkit) as a child,
// asynchronously (the supervisor answering it lives in this very process), with every run bounded.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { ROOT } from './helpers'

export const REAPKIT = join(ROOT, 'bin', 'reapkit')

export interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs `file args` (default: bin/reapkit), killed after `timeoutMs`; never rejects. */
export function run(args: string[], options: { file?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; uid?: number; gid?: number } = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      options.file ?? REAPKIT,
      args,
      { env: { ...process.env, ...options.env }, timeout: options.timeoutMs ?? 30_000, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024, uid: options.uid, gid: options.gid },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: unknown }).code as number | null) ?? null : 0, stdout: String(stdout), stderr: String(stderr) }),
    )
  })
}

/**
 * The screen a terminal would show after `raw` (what a program wrote to a pty), for the few
 * control sequences `reapkit top` uses: the alternate screen (1049h/l; the screen returned is the
 * alternate one as it was just before the program left it), cursor home (H), erase to the end of
 * the line (K) and below (J), cursor show/hide (25h/l). Any other sequence throws: the view must
 * not rely on what this model does not know. Lines are `cols` wide at most (a longer one wraps).
 */
export function screenOf(raw: string, cols = 80, rows = 24): { lines: string[]; wrapped: boolean } {
  const blank = () => Array.from({ length: rows }, () => '')
  let main = blank()
  let alt: string[] | null = null
  let lastAlt: string[] | null = null
  let wrapped = false
  let r = 0
  let c = 0
  const scr = () => alt ?? main
  const put = (ch: string) => {
    if (c >= cols) {
      wrapped = true
      c = 0
      r++
    }
    if (r >= rows) {
      scr().shift()
      scr().push('')
      r = rows - 1
    }
    const line = scr()[r]!.padEnd(c)
    scr()[r] = line.slice(0, c) + ch + line.slice(c + 1)
    c++
  }
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i]!
    if (ch === '\x1b') {
      const m = /^\x1b\[(\??)([\d;]*)([A-Za-z])/.exec(raw.slice(i))
      if (!m) throw new Error(`an escape the model does not know at ${i}: ${JSON.stringify(raw.slice(i, i + 10))}`)
      i += m[0].length - 1
      const seq = `${m[1]}${m[2]}${m[3]}`
      if (seq === '?1049h') (alt = blank()), (r = 0), (c = 0)
      else if (seq === '?1049l') (lastAlt = alt), (alt = null)
      else if (seq === 'H' && m[2] === '') (r = 0), (c = 0)
      else if (seq === 'K') scr()[r] = scr()[r]!.slice(0, c)
      else if (seq === 'J') {
        scr()[r] = scr()[r]!.slice(0, c)
        for (let j = r + 1; j < rows; j++) scr()[j] = ''
      } else if (seq === '?25l' || seq === '?25h') continue
      else throw new Error(`a sequence the model does not know: ESC[${seq}`)
    } else if (ch === '\r') c = 0
    else if (ch === '\n') {
      r++
      if (r >= rows) {
        scr().shift()
        scr().push('')
        r = rows - 1
      }
    } else put(ch)
  }
  return { lines: (lastAlt ?? alt ?? main).map((l) => l.trimEnd()), wrapped }
}
