#!/usr/bin/env node
// Is prebuilds/ complete and fit to ship? For each target of targets.mjs: are its addon and helpers
// there, and does each file ask no more of the user's machine than we promise (the machine; for
// glibc builds no symbol version above the baseline and no libstdc++; for musl builds no glibc
// symbol and only libc.so, which musl's loader maps to itself; helpers static, so they run on
// either libc). `npm pack` runs it last (prepack): a tarball either carries every target or fails
// naming the missing ones and where they come from.
//
//   node scripts/prebuild/check.mjs [--json] [TARGET...]    (TARGET: a name or a folder; default all)
//
// REAPKIT_PREBUILD_ALLOW_MISSING=darwin-x64,darwin-arm64 (target names or folder names) accepts a
// tarball without them, saying so; REAPKIT_PREBUILD_WIN32=skip implies win32-x64.
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { compareVersions, inspectBinary } from './elf.mjs'
import { filesOf, GLIBC_BASELINE, helpersOf, howToGet, TARGETS } from './targets.mjs'

/** The libraries a glibc addon may need: parts of glibc itself, present on every glibc system. */
const GLIBC_LIBS = /^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux-(x86-64|aarch64)\.so\.[12])$/

/** What is wrong with one shipped file of `target`, as sentences (empty: fit to ship). */
export function fileProblems(target, name, facts) {
  const problems = []
  const expected = target.os === 'darwin' ? 'macho' : target.os === 'win32' ? 'pe' : 'elf'
  if (facts.format !== expected) return [`${name}: a ${facts.format} file, expected ${expected}`]
  if (facts.machine !== target.machine) problems.push(`${name}: built for ${facts.machine}, expected ${target.machine}`)
  if (expected !== 'elf') return problems
  if (name === target.addon) {
    if (target.libc === 'glibc') {
      if (facts.glibcMax && compareVersions(facts.glibcMax, GLIBC_BASELINE) > 0) {
        const newer = Object.values(facts.versions).flat().filter((v) => /^GLIBC_\d/.test(v) && compareVersions(v.slice(6), GLIBC_BASELINE) > 0).sort((a, b) => compareVersions(a.slice(6), b.slice(6)))
        problems.push(`${name}: needs glibc ${facts.glibcMax} (${newer.join(', ')}); the baseline is ${GLIBC_BASELINE}`)
      }
      const other = facts.needed.filter((lib) => !GLIBC_LIBS.test(lib))
      if (other.length) problems.push(`${name}: needs ${other.join(', ')} beyond glibc itself`)
    } else {
      const versioned = Object.keys(facts.versions)
      if (versioned.length) problems.push(`${name}: a musl build that needs versioned symbols from ${versioned.join(', ')}`)
      const other = facts.needed.filter((lib) => lib !== 'libc.so')
      if (other.length) problems.push(`${name}: a musl build that needs ${other.join(', ')} (only libc.so expected)`)
    }
  } else if (!facts.static) {
    problems.push(`${name}: not static (interpreter ${facts.interpreter}, needs ${facts.needed.join(', ') || 'nothing'}): it must run beside the glibc and the musl addon`)
  }
  return problems
}

/** One target's state in `prebuildsDir`: the files missing, what each present file is, and what is wrong. */
export function inspectTarget(prebuildsDir, target) {
  const dir = join(prebuildsDir, target.dir)
  const missing = filesOf(target).filter((f) => !existsSync(join(dir, f)))
  const files = {}
  const problems = []
  for (const name of filesOf(target)) {
    if (missing.includes(name)) continue
    try {
      files[name] = inspectBinary(join(dir, name))
      problems.push(...fileProblems(target, name, files[name]))
    } catch (err) {
      problems.push(`${name}: ${err.message}`)
    }
  }
  return { target, missing, files, problems }
}

/** Targets a tarball may leave out, from the environment (see the top of this file). */
export function allowedMissing(env = process.env) {
  const allowed = new Set((env.REAPKIT_PREBUILD_ALLOW_MISSING ?? '').split(',').map((s) => s.trim()).filter(Boolean))
  if (env.REAPKIT_PREBUILD_WIN32 === 'skip') allowed.add('win32-x64')
  return (t) => allowed.has(t.name) || allowed.has(t.dir)
}

/** Prints the state of every target; returns the process exit code (0: fit to ship). */
export function report(prebuildsDir, { json = false, env = process.env, only = [] } = {}) {
  const rows = TARGETS.filter((t) => only.length === 0 || only.includes(t.name) || only.includes(t.dir)).map((t) => inspectTarget(prebuildsDir, t))
  if (rows.length === 0) throw new Error(`no such target: ${only.join(', ')}`)
  const allowed = allowedMissing(env)
  let failed = 0
  const absent = []
  const lines = []
  for (const { target, missing, files, problems } of rows) {
    const addon = files[target.addon]
    const about = addon ? [addon.machine, addon.glibcMax ? `glibc >= ${addon.glibcMax}` : target.libc === 'musl' ? `needs ${addon.needed.join(', ')}` : null].filter(Boolean).join(', ') : ''
    if (problems.length) {
      failed++
      lines.push(`FAIL     ${target.name}: ${problems.join('; ')}`)
    } else if (missing.length === filesOf(target).length) {
      if (allowed(target)) lines.push(`left out ${target.name}: allowed by the environment; ${target.dir} users build with node-gyp at install`)
      else {
        failed++
        absent.push(target.name)
        lines.push(`MISSING  ${target.name}: ${howToGet(target)}`)
      }
    } else if (missing.length) {
      failed++
      lines.push(`MISSING  ${target.name}: ${missing.join(', ')} (the rest of prebuilds/${target.dir} is there): ${howToGet(target)}`)
    } else {
      lines.push(`ok       ${target.name}: ${target.addon} (${about}) + ${helpersOf(target).join(', ')}`)
    }
  }
  if (json) console.log(JSON.stringify(rows, null, 2))
  else console.error(['== prebuilds/ (scripts/prebuild/check.mjs)', ...lines].join('\n'))
  if (failed) {
    const hint = absent.length ? `; to pack without the missing ones (their users then build with node-gyp at install): REAPKIT_PREBUILD_ALLOW_MISSING=${absent.join(',')}` : ''
    console.error(`prebuilds: ${failed} target(s) missing or unfit${hint}`)
  }
  return failed ? 1 : 0
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
  const args = process.argv.slice(2)
  process.exitCode = report(join(root, 'prebuilds'), { json: args.includes('--json'), only: args.filter((a) => !a.startsWith('--')) })
}
