// What a shipped binary asks of the machine that loads it, read from the file itself (no objdump:
// the host's binutils cannot read an AArch64 ELF, and the check must give the same answer on any
// machine). For ELF: the machine, the program interpreter, the libraries it needs (DT_NEEDED) and
// the symbol versions it needs from each (SHT_GNU_verneed: the GLIBC_2.x that decide which glibc
// can load it). For PE (Windows) and Mach-O (macOS): the machine only.
import { readFileSync } from 'node:fs'

const ELF_MACHINES = { 62: 'x86-64', 183: 'aarch64' }
const PE_MACHINES = { 0x8664: 'x86-64', 0xaa64: 'aarch64' }
const MACHO_CPUS = { 0x01000007: 'x86-64', 0x0100000c: 'aarch64' }

const PT_DYNAMIC = 2
const PT_INTERP = 3
const SHT_DYNAMIC = 6
const SHT_GNU_VERNEED = 0x6ffffffe
const DT_NEEDED = 1

/** A NUL-terminated string at `off`. */
function cstring(buf, off) {
  const end = buf.indexOf(0, off)
  return buf.toString('latin1', off, end < 0 ? buf.length : end)
}

/** Reads a 64-bit little-endian ELF file (the only kind we ship: x86-64 and AArch64). */
function readElf(buf) {
  if (buf[4] !== 2 || buf[5] !== 1) throw new Error(`not a 64-bit little-endian ELF file (class ${buf[4]}, data ${buf[5]})`)
  const u16 = (o) => buf.readUInt16LE(o)
  const u32 = (o) => buf.readUInt32LE(o)
  const u64 = (o) => Number(buf.readBigUInt64LE(o))
  const type = { 2: 'exec', 3: 'dyn' }[u16(16)] ?? `type ${u16(16)}`
  const machineCode = u16(18)
  const phoff = u64(32)
  const shoff = u64(40)
  const phentsize = u16(54)
  const phnum = u16(56)
  const shentsize = u16(58)
  const shnum = u16(60)

  let interpreter = null
  let hasDynamic = false
  for (let i = 0; i < phnum; i++) {
    const ph = phoff + i * phentsize
    const ptype = u32(ph)
    if (ptype === PT_INTERP) interpreter = cstring(buf, u64(ph + 8))
    if (ptype === PT_DYNAMIC) hasDynamic = true
  }

  const sections = []
  for (let i = 0; i < shnum; i++) {
    const sh = shoff + i * shentsize
    sections.push({ type: u32(sh + 4), offset: u64(sh + 24), size: u64(sh + 32), link: u32(sh + 40), entsize: u64(sh + 56) })
  }
  if (hasDynamic && sections.length === 0) throw new Error('a dynamic ELF file without section headers: cannot read what it needs')

  const needed = []
  const versions = {}
  for (const s of sections) {
    if (s.type === SHT_DYNAMIC) {
      const strtab = sections[s.link].offset
      for (let o = s.offset; o + 16 <= s.offset + s.size; o += 16) {
        const tag = u64(o)
        if (tag === 0) break
        if (tag === DT_NEEDED) needed.push(cstring(buf, strtab + u64(o + 8)))
      }
    } else if (s.type === SHT_GNU_VERNEED) {
      const strtab = sections[s.link].offset
      // Verneed entries: vn_version u16, vn_cnt u16, vn_file u32, vn_aux u32, vn_next u32; each
      // with vn_cnt Vernaux: vna_hash u32, vna_flags u16, vna_other u16, vna_name u32, vna_next u32.
      for (let vn = s.offset; ; ) {
        const file = cstring(buf, strtab + u32(vn + 4))
        const names = (versions[file] ??= [])
        for (let aux = vn + u32(vn + 8), n = u16(vn + 2); n > 0; n--) {
          names.push(cstring(buf, strtab + u32(aux + 8)))
          const next = u32(aux + 12)
          if (next === 0) break
          aux += next
        }
        const next = u32(vn + 12)
        if (next === 0) break
        vn += next
      }
    }
  }
  const glibc = Object.values(versions).flat().map(parseGlibc).filter(Boolean)
  return {
    format: 'elf',
    machine: ELF_MACHINES[machineCode] ?? `e_machine ${machineCode}`,
    type,
    interpreter,
    needed,
    versions,
    glibcMax: glibc.length ? formatVersion(glibc.sort(compareVersions).at(-1)) : null,
    static: interpreter === null && needed.length === 0,
  }
}

function readPe(buf) {
  const pe = buf.readUInt32LE(0x3c)
  if (buf.toString('latin1', pe, pe + 4) !== 'PE\0\0') throw new Error('MZ header without a PE signature')
  const code = buf.readUInt16LE(pe + 4)
  return { format: 'pe', machine: PE_MACHINES[code] ?? `machine 0x${code.toString(16)}` }
}

function readMachO(buf) {
  const cpu = buf.readUInt32LE(4)
  return { format: 'macho', machine: MACHO_CPUS[cpu] ?? `cputype 0x${cpu.toString(16)}` }
}

/** [major, minor, patch] of a GLIBC_x.y[.z] version name, or null for anything else (GLIBC_PRIVATE...). */
export function parseGlibc(name) {
  const m = /^GLIBC_(\d+)\.(\d+)(?:\.(\d+))?$/.exec(name)
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : null
}

/** 2.28 for [2, 28, 0], 2.2.5 for [2, 2, 5]. */
const formatVersion = ([major, minor, patch]) => (patch ? `${major}.${minor}.${patch}` : `${major}.${minor}`)

export function compareVersions(a, b) {
  const pa = typeof a === 'string' ? a.split('.').map(Number) : a
  const pb = typeof b === 'string' ? b.split('.').map(Number) : b
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0)
    if (d !== 0) return d
  }
  return 0
}

/** What `file` is and what it needs to load (see the top of this file). */
export function inspectBinary(file) {
  const buf = readFileSync(file)
  if (buf.length >= 64 && buf.readUInt32BE(0) === 0x7f454c46) return readElf(buf)
  if (buf.length >= 64 && buf.toString('latin1', 0, 2) === 'MZ') return readPe(buf)
  if (buf.length >= 32 && buf.readUInt32LE(0) === 0xfeedfacf) return readMachO(buf)
  throw new Error(`${file}: not an ELF, PE or 64-bit Mach-O file`)
}
