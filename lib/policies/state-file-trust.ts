/**
 * Whether a Supervisor state file may steer signals: the rules OpenSSH (StrictModes) and systemd
 * apply to files that steer privileged actions.
 *
 * A state file names processes that the next supervisor stops. Whoever can write it, or put a file
 * of their own at its name, could aim that supervisor's signals at any process it may signal. So:
 * - the file's folder and every folder above it (symlinks in the folder path resolved first, then
 *   each real folder checked) belong to this process's effective user or to root, and nobody else
 *   can write them. A folder above the file's own folder may be world-writable if it is sticky (as
 *   /tmp is): nobody else can rename or remove what is ours inside it. The file's own folder may
 *   not be, since anyone could then put a file at its name first;
 * - the file itself is opened with O_NOFOLLOW (a symlink at its name is refused) and checked on the
 *   opened descriptor (fstat), never by path: a regular file, owned by the effective user or root,
 *   writable by nobody else.
 * Anything else is refused with ERR_REAPKIT_STATE_FILE_UNSAFE before anything is read or signalled.
 *
 * The same rules serve every file whose content steers what we stop: doctor reads a container
 * client's `--cidfile` by them too (TrustedFile CIDFILE; only a client of doctor's own user's, whose
 * word is ours: another user's file is never opened), with its own words and bound.
 */
import { closeSync, constants as fsConstants, fstatSync, lstatSync, openSync, readSync, realpathSync, type Stats } from 'node:fs'
import { basename, dirname, join, parse } from 'node:path'
import { ReapkitError } from '../ground/errors'

const GROUP_OR_OTHER_WRITE = 0o022
const STICKY = 0o1000

/** A kind of file that steers what we stop: its name in errors, its code, why it must be ours, its bound. */
export interface TrustedFile {
  what: string
  code: string
  why: string
  maxBytes: number
  /**
   * Its own folder may be sticky and writable by others (/tmp): only for a file we read and never
   * write, which must then be ours (or root's) and is never followed through a link (and
   * protected_hardlinks keeps others from linking our files in). A state file may not: we write it,
   * and anyone could put a file at its name first.
   */
  stickyFolder: boolean
}

export const STATE_FILE: TrustedFile = {
  what: 'the state file',
  code: 'ERR_REAPKIT_STATE_FILE_UNSAFE',
  why: 'A state file steers signals, so only this user (or root) may be able to write it or its folders; choose a path in a folder of your own (e.g. mode 0700)',
  maxBytes: 16 * 1024 * 1024,
  stickyFolder: false,
}

/** A container client's `--cidfile` (a container id: 64 hex digits and a newline at most). */
export const CIDFILE: TrustedFile = {
  what: 'the --cidfile',
  code: 'ERR_REAPKIT_CIDFILE_UNSAFE',
  why: 'A --cidfile names the container doctor stops, so only this user (or root) may be able to write it or its folders',
  maxBytes: 256,
  stickyFolder: true,
}

function unsafe(file: string, why: string, kind: TrustedFile = STATE_FILE): ReapkitError {
  return new ReapkitError(kind.code, `Refusing ${kind.what} ${file}: ${why}. ${kind.why}`)
}

function euid(): number {
  return typeof process.geteuid === 'function' ? process.geteuid() : 0
}

function ownedBySelfOrRoot(st: Stats): boolean {
  return st.uid === euid() || st.uid === 0
}

/** Every real folder from `dir` up to the root, `dir` first. */
function realFolders(dir: string): string[] {
  const folders: string[] = []
  let current = realpathSync(dir)
  const root = parse(current).root
  for (;;) {
    folders.push(current)
    if (current === root) return folders
    current = dirname(current)
  }
}

/**
 * Throws ERR_REAPKIT_STATE_FILE_UNSAFE unless the folder that holds (or will hold) `file`, and every
 * folder above it, is safe by the rules above. A folder that does not exist yet is refused too: the
 * supervisor does not create folders.
 *
 * Returns the file's path through its real folder. Every later open, temporary file and rename must
 * use that path: the given one may pass through a symlink that someone else owns and could retarget
 * after this check.
 */
export function checkStateFolder(file: string, kind: TrustedFile = STATE_FILE): string {
  if (process.platform === 'win32') return file // no state file on Windows (the Supervisor says so first)
  let folders: string[]
  try {
    folders = realFolders(dirname(file))
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT') throw unsafe(file, `its folder ${dirname(file)} does not exist`, kind)
    throw unsafe(file, `its folder cannot be resolved (${code ?? (err as Error).message})`, kind)
  }
  folders.forEach((folder, i) => {
    const st = lstatSync(folder)
    if (!st.isDirectory()) throw unsafe(file, `${folder} is not a folder`, kind)
    if (!ownedBySelfOrRoot(st)) throw unsafe(file, `the folder ${folder} belongs to uid ${st.uid}`, kind)
    const writableByOthers = (st.mode & GROUP_OR_OTHER_WRITE) !== 0
    const stickyAbove = (i > 0 || kind.stickyFolder) && (st.mode & STICKY) !== 0
    if (writableByOthers && !stickyAbove) {
      throw unsafe(file, `the folder ${folder} can be written by others (mode ${(st.mode & 0o7777).toString(8)})`, kind)
    }
  })
  return join(folders[0]!, basename(file))
}

function checkOpened(file: string, st: Stats, kind: TrustedFile): void {
  if (!st.isFile()) throw unsafe(file, 'it is not a regular file', kind)
  if (!ownedBySelfOrRoot(st)) throw unsafe(file, `it belongs to uid ${st.uid}`, kind)
  if ((st.mode & GROUP_OR_OTHER_WRITE) !== 0) throw unsafe(file, `others can write it (mode ${(st.mode & 0o777).toString(8)})`, kind)
  if (st.size > kind.maxBytes) throw unsafe(file, `it is ${st.size} bytes, more than any ${kind.what.replace(/^the /, '')}`, kind)
}

/**
 * Reads the state file through a descriptor opened without following a symlink and checked with
 * fstat. `file` is the path checkStateFolder returned. null when there is no file yet (ENOENT).
 * Throws ERR_REAPKIT_STATE_FILE_UNSAFE when the file may not be trusted; other read errors are
 * thrown as they are.
 */
export function readTrustedStateFile(file: string, kind: TrustedFile = STATE_FILE): string | null {
  // What is at the name, before it is opened: opening a device has effects of its own (a watchdog,
  // a tape), whatever O_NONBLOCK says; the opened file must then be this very one.
  let before: Stats
  try {
    before = lstatSync(file)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
  if (before.isSymbolicLink()) throw unsafe(file, 'its name is a symlink', kind)
  if (!before.isFile()) throw unsafe(file, 'it is not a regular file', kind)
  let fd: number
  try {
    // O_NONBLOCK: a FIFO planted at the name must not block the open (fstat then refuses it);
    // O_NOCTTY: a terminal there never becomes ours.
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return null
    if (code === 'ELOOP') throw unsafe(file, 'its name is a symlink', kind)
    throw err
  }
  try {
    const st = fstatSync(fd)
    if (st.dev !== before.dev || st.ino !== before.ino) throw unsafe(file, 'it was replaced while it was being opened', kind)
    checkOpened(file, st, kind)
    const buf = Buffer.alloc(st.size)
    let off = 0
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, off)
      if (n === 0) break
      off += n
    }
    return buf.subarray(0, off).toString('utf8')
  } finally {
    closeSync(fd)
  }
}

/** A file of `kind` read by the rules above (its folders, then the file itself); null when there is none. */
export function readTrustedFile(file: string, kind: TrustedFile): string | null {
  return readTrustedStateFile(checkStateFolder(file, kind), kind)
}
