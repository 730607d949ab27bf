// Node's own child_process tests, run as they are against Node's functions and again with
// reapkit's patched in (patch-child-process.cjs): `node scripts/node-tests/run.mjs NODE_SRC [regexp]`.
//
// NODE_SRC is an unpacked Node source tree of the running Node's line (its test/ folder is what is
// used; nothing of it is copied here): Debian's orig tarball, for one, holds it
//   curl -O http://deb.debian.org/debian/pool/main/n/nodejs/nodejs_20.19.2+dfsg.orig.tar.xz
//   tar -xJf nodejs_20.19.2+dfsg.orig.tar.xz node-v20.19.2/test
// The regexp picks test/parallel files by name (default: exec, execFile and fork's tests; the
// *Sync ones are left out: reapkit has no sync forms). Each test runs in a fresh process from the
// source root, as tools/test.py runs it, one at a time, bounded (TEST_TIMEOUT_MS, default 60 s); a
// test passes when it exits 0, and counts as skipped when it says so ("1..0 # Skipped").
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const [src, pattern = '^test-child-process-(exec|execfile|fork|promisified)(?!.*sync)'] = process.argv.slice(2)
if (!src) {
  console.error('usage: node scripts/node-tests/run.mjs NODE_SRC [regexp]')
  process.exit(2)
}
const root = resolve(src)
const dist = resolve(here, '..', '..', 'dist', 'cjs', 'index.js')
const timeout = Number(process.env.TEST_TIMEOUT_MS) || 60_000
const re = new RegExp(pattern, 'i')
const files = readdirSync(join(root, 'test', 'parallel')).filter((f) => re.test(f) && /\.m?js$/.test(f)).sort()

function run(file, patched) {
  const argv = [...(patched ? ['-r', join(here, 'patch-child-process.cjs')] : []), join('test', 'parallel', file)]
  const r = spawnSync(process.execPath, argv, { cwd: root, encoding: 'utf8', timeout, env: { ...process.env, REAPKIT_DIST: dist } })
  const out = `${r.stdout}${r.stderr}`
  if (r.status === 0 && /^1\.\.0 # Skipped/m.test(out)) return { result: 'skip', out }
  return { result: r.status === 0 ? 'pass' : r.error ? 'timeout' : 'fail', out }
}

const tally = { node: { pass: 0, fail: 0, skip: 0, timeout: 0 }, reapkit: { pass: 0, fail: 0, skip: 0, timeout: 0 } }
for (const file of files) {
  const theirs = run(file, false)
  const ours = run(file, true)
  tally.node[theirs.result]++
  tally.reapkit[ours.result]++
  console.log(`${file.padEnd(58)} node: ${theirs.result.padEnd(7)} reapkit: ${ours.result}`)
  if (ours.result !== theirs.result && process.env.VERBOSE) console.log(ours.out.split('\n').slice(0, 30).join('\n'))
}
for (const [who, t] of Object.entries(tally)) {
  console.log(`${who}: ${t.pass} passed of ${files.length - t.skip} run (${t.fail} failed, ${t.timeout} timed out, ${t.skip} skipped)`)
}
