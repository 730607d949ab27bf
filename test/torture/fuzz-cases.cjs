// fuzz-cases.cjs: the property-based cases of the fuzz suite (see fuzz-runner.cjs for the world
// they run in). One case per public function that takes a pid, a signal or a timeout. Each case
// draws arbitrary arguments, computes from the *documented contract* (not from lib/) what must
// happen (a clear error with a Node-style code, or the documented behaviour), makes the call and
// judges it. The runner then checks that no signal reached anyone outside the sacrificial group.
//
// Arguments that name real processes are symbolic (`<A>`, `plus2^32(<S>)`, ...) and resolved at
// call time, so a counterexample printed by one run means the same thing when replayed by another.
'use strict'
const fc = require('fast-check')
const { constants } = require('node:os')

const SIGNALS = constants.signals // null prototype: 'toString' is not a signal here
const SIGNAL_NUMBERS = new Set(Object.values(SIGNALS))
const MAX_PID = 2 ** 31 - 1
const MAX_MS = 2 ** 31 - 1
const TYPE = 'ERR_INVALID_ARG_TYPE'
const RANGE = 'ERR_OUT_OF_RANGE'
const UNKNOWN = 'ERR_UNKNOWN_SIGNAL'
const VALUE = 'ERR_INVALID_ARG_VALUE'
const SELF = 'ERR_REAPKIT_SELF'
const NOT_SUPERVISED = 'ERR_REAPKIT_NOT_SUPERVISED'
// Supervisor ids are pids or request ids: anything else is refused by type (ERR_INVALID_ARG_TYPE).
const idOk = (id) => typeof id === 'number' || typeof id === 'string'
/** The codes of argument errors (a call that throws one of these for valid input is wrong). */
const VALIDATION = new Set([TYPE, RANGE, UNKNOWN, VALUE, SELF])
/** The class each argument-error code must come in. */
const ERROR_CLASS = { [TYPE]: 'TypeError', [UNKNOWN]: 'TypeError', [VALUE]: 'TypeError', [RANGE]: 'RangeError', [SELF]: 'RangeError' }

/** A signal's number (for input already judged valid; never coerces hostile objects). */
const signalNumber = (s) => (typeof s === 'number' ? s : typeof s === 'string' ? SIGNALS[s] : undefined)
const isObject = (x) => typeof x === 'object' && x !== null
const show = (x) => {
  try {
    return fc.stringify(x)
  } catch {
    return String(x)
  }
}

// ---------------------------------------------------------------------------------------------
// Symbolic references to real processes and objects of the world
// ---------------------------------------------------------------------------------------------

/** How a real pid is presented: as is, wrapped past 2^32, negated, as a string, boxed, ... */
const TRANSFORMS = {
  id: (p) => p,
  'plus2^32': (p) => p + 2 ** 32, // wraps to p in a 32-bit pid_t
  'minus2^32': (p) => p - 2 ** 32, // wraps to p too
  'plus2^31': (p) => p + 2 ** 31, // wraps to a negative pid_t (a group)
  'plus2^64': (p) => p + 2 ** 64, // a double that a careless cast turns into anything
  neg: (p) => -p, // kill(-p) is a group
  'plus0.5': (p) => p + 0.5, // truncates to p
  string: (p) => String(p),
  bigint: (p) => BigInt(p),
  boxed: (p) => new Number(p), // eslint-disable-line no-new-wrappers
  valueOf: (p) => ({ valueOf: () => p }),
  array: (p) => [p],
}

/** A symbolic input: a process of the world (`target`), presented through `how`. */
class Ref {
  constructor(target, how = 'id', pick = 0, payload = undefined) {
    this.target = target
    this.how = how
    this.pick = pick
    this.payload = payload
  }
  [fc.toStringMethod]() {
    if (this.payload !== undefined) return `<${this.target} pid=${show(this.payload)}>`
    const name = `<${this.target}${this.target.endsWith('Thread') ? `#${this.pick}` : ''}>`
    return this.how === 'id' ? name : `${this.how}(${name})`
  }
}

/** Marks option objects drawn by fc.record, whose values the run resolves (junk objects are passed as drawn). */
const DRAWN = Symbol('drawn options')
const drawn = (o) => Object.defineProperty(o, DRAWN, { value: true })

// ---------------------------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------------------------

/** Processes a pid argument may name (see World#pidOf). */
const PIDS = ['self', 'selfThread', 'init', 'initThread', 'A', 'B', 'B2', 'S', 'S2', 'ownPgid', 'gone']

const PID_SPECIALS = [
  0, -0, 1, -1, 2, MAX_PID, 2 ** 31, 2 ** 31 + 1, 2 ** 32, 2 ** 32 - 1, 2 ** 32 + 1, 2 ** 32 + 2, 2 ** 53 - 1, 2 ** 53,
  -(2 ** 31), -(2 ** 31) + 1, -(2 ** 32), -(2 ** 32) + 1, Number.MAX_VALUE, Number.MIN_VALUE, Number.EPSILON, -Number.MIN_VALUE,
  NaN, Infinity, -Infinity, 0.5, 1.5, 1.0000001, -1.5, 1e-300, 1e300,
]
const SIGNAL_SPECIALS = [
  'sigterm', 'Sigterm', 'TERM', 'SIG', '', ' SIGTERM', 'SIGTERM ', 'SIGTERM\0', 'SIGRTMIN', 'SIGRTMIN+1', 'SIGRTMAX', 'SIGCLD',
  'SIGEMT', 'SIGINFO', 'SIGLOST', 'SIGUNUSED', 'SIGKILL\n', '9', '15', '0', 'toString', 'constructor', '__proto__', 'valueOf',
  'hasOwnProperty', 32, 33, 34, 64, 65, 128, 255, 256 + 15, 65536 + 9, -1, -9, -15, 9.5, 0.5, 1e-9, -0, NaN, Infinity, -Infinity,
  2 ** 32 + 9, 2 ** 32 + 15, 2 ** 32, -(2 ** 32) + 15, 2 ** 31 + 15, 15n, 9n, 0n, null, true, false, [15], ['SIGTERM'],
  new Number(15), { valueOf: () => 15 }, { toString: () => 'SIGTERM' }, // eslint-disable-line no-new-wrappers
]
const MS_SPECIALS = [
  -1, -0.5, -Number.MIN_VALUE, -Infinity, NaN, 2 ** 31, 2 ** 31 + 0.5, 2 ** 32, 2 ** 32 + 5, 1e308, Number.MAX_SAFE_INTEGER,
  '100', '', ' 5', '1e3', 'Infinity', null, true, false, 10n, {}, [], [5], new Number(5), { valueOf: () => 5 }, new Date(0), // eslint-disable-line no-new-wrappers
]

const junk = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
  fc.constantFrom(null, undefined, true, false, Symbol.for('fuzz'), () => 5, {}, []),
  // Objects that cannot be turned into a string: an error message must not be built with String(x).
  fc.constantFrom(Object.create(null), { toString: null, valueOf: null }),
  fc.object({ maxDepth: 1, maxKeys: 3 }),
  fc.array(fc.integer(), { maxLength: 2 }),
)

const A = {
  junk,
  ref: (targets) =>
    fc
      .tuple(
        fc.constantFrom(...targets),
        fc.oneof({ weight: 5, arbitrary: fc.constant('id') }, { weight: 5, arbitrary: fc.constantFrom(...Object.keys(TRANSFORMS).slice(1)) }),
        fc.nat(31),
      )
      .map(([target, how, pick]) => new Ref(target, how, pick)),
  /** A pid argument: real pids (as is and disguised), edge values, integers, doubles, junk. */
  pid: (targets = PIDS) =>
    fc.oneof(
      { weight: 6, arbitrary: A.ref(targets) },
      { weight: 2, arbitrary: fc.constantFrom(...PID_SPECIALS) },
      { weight: 2, arbitrary: fc.integer() },
      { weight: 1, arbitrary: fc.integer({ min: 2, max: 800 }) }, // where the namespace's pids are
      { weight: 1, arbitrary: fc.double() },
      { weight: 1, arbitrary: junk },
    ),
  /** A signal argument: every name Node knows, numbers, near misses, junk. */
  signal: () =>
    fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom(...Object.keys(SIGNALS)) },
      { weight: 2, arbitrary: fc.integer({ min: 0, max: 31 }) },
      { weight: 3, arbitrary: fc.constantFrom(...SIGNAL_SPECIALS) },
      { weight: 1, arbitrary: fc.integer() },
      { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
      { weight: 1, arbitrary: junk },
    ),
  /** A duration in ms: small valid ones, the bounds, and everything a timeout must refuse. */
  ms: () =>
    fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(undefined, 0, -0, 1, 2, 10, 0.5, MAX_MS, Infinity, Number.MIN_VALUE) },
      { weight: 2, arbitrary: fc.integer({ min: 0, max: 60 }) },
      { weight: 3, arbitrary: fc.constantFrom(...MS_SPECIALS) },
      { weight: 1, arbitrary: fc.double() },
      { weight: 1, arbitrary: fc.integer() },
      { weight: 1, arbitrary: junk },
    ),
  abort: () =>
    fc.oneof(
      { weight: 3, arbitrary: fc.constant(undefined) },
      { weight: 2, arbitrary: fc.constantFrom(new Ref('aborted'), new Ref('liveAbort'), new Ref('fakeAbort')) },
      { weight: 1, arbitrary: fc.constantFrom({}, 'signal', 1, null, true, { aborted: 'no', addEventListener() {} }) },
    ),
  /** An options argument: a drawn record (keys may be absent) or, sometimes, not an object at all. */
  options: (fields, junkWeight = 1) =>
    fc.oneof(
      { weight: 8, arbitrary: fc.record(fields, { requiredKeys: [] }).map(drawn) },
      { weight: junkWeight, arbitrary: fc.constantFrom(undefined, null, 'options', 5, true, () => {}) },
    ),
  /** Extra options of kill/killpg/openProcess: never `allowSelf: true`. */
  selfOptions: () => fc.constantFrom(undefined, {}, { allowSelf: false }, { allowSelf: 'true' }, { allowSelf: 1 }, null, 'allowSelf', 0),
  /** A process target of the wait/stop functions: a pid argument, or one of the world's objects. */
  target: (pidTargets, objects) =>
    fc.oneof({ weight: 3, arbitrary: A.pid(pidTargets) }, { weight: 2, arbitrary: fc.constantFrom(...objects.map((o) => new Ref(o))) }),
}

// ---------------------------------------------------------------------------------------------
// The contract, as rules: each returns the violations of one argument ([] when it is valid)
// ---------------------------------------------------------------------------------------------

const violation = (why, ...codes) => [{ why, codes }]

/** A pid for a call that acts on a process: an integer in 2..2^31-1. */
function pidRule(x, why = 'pid') {
  if (typeof x !== 'number') return violation(why, TYPE)
  if (!Number.isInteger(x) || x < 2 || x > MAX_PID) return violation(why, RANGE)
  return []
}
/** getpgid / setpgid also take 0 (or nothing) for "this process". */
const pidOrSelfRule = (x, why) => (x === undefined || x === 0 ? [] : pidRule(x, why))

/** A signal name Node knows or its number (0, the existence check, where allowed). */
function signalRule(x, why = 'signal', allowZero = true) {
  if (typeof x === 'string') return Object.hasOwn(SIGNALS, x) ? [] : violation(why, UNKNOWN)
  if (typeof x === 'number') return (x === 0 ? allowZero : Number.isInteger(x) && SIGNAL_NUMBERS.has(x)) ? [] : violation(why, UNKNOWN)
  return violation(why, TYPE)
}

/** A duration option: a number of ms in 0..2^31-1 (Infinity only where a wait may be unbounded). */
function msRule(x, why, allowInfinity = false) {
  if (x === undefined) return []
  if (typeof x !== 'number') return violation(why, TYPE)
  if (Number.isNaN(x)) return violation(why, TYPE, RANGE)
  if (x >= 0 && (x <= MAX_MS || (allowInfinity && x === Infinity))) return []
  return violation(why, RANGE)
}

/**
 * The signals of the stop functions (killProcessGracefully, closeClient): null / undefined for the
 * default. 0 sends nothing, so a "kill" with it kills nobody: it may be refused; if it is taken,
 * the result must still name only real signals.
 */
function stopSignalRules(o, fails, lenient) {
  for (const [key, fallback] of [['signal', 'SIGTERM'], ['killSignal', 'SIGKILL']]) {
    const x = o[key]
    if (x === 0) lenient.push(...violation(`${key} 0`, UNKNOWN))
    else fails.push(...signalRule(x ?? fallback, key))
  }
}
const signalsSentRule = (sent) => {
  if (!Array.isArray(sent)) return `signalsSent is ${show(sent)}`
  const bad = sent.find((x) => !Object.hasOwn(SIGNALS, x?.signal) || !(x.processes >= 1))
  return bad ? `signalsSent has ${show(bad)}` : null
}

const optionsRule = (x, why = 'options') => (x === undefined || isObject(x) ? [] : violation(why, TYPE))
const booleanRule = (x, why) => (x === undefined || typeof x === 'boolean' ? [] : violation(why, TYPE))
function abortRule(x, why) {
  if (x === undefined) return []
  if (isObject(x) && typeof x.aborted === 'boolean' && typeof x.addEventListener === 'function') return []
  return violation(why, TYPE)
}
/** The death-signal options: false / null for none, else a signal other than 0. */
function deathSignalRule(x, why) {
  if (x === undefined || x === false || x === null) return []
  return signalRule(x, why, false)
}
const deathSignalNumber = (x, fallback) => (x === undefined ? SIGNALS[fallback] : x === false || x === null ? 0 : signalNumber(x))

/** What a target of watchExit / killProcessGracefully is. */
function targetKind(w, x) {
  if (x instanceof w.r.ProcessHandle) return 'handle'
  if (isObject(x) && typeof x.once === 'function' && 'exitCode' in x && 'signalCode' in x) return 'child'
  return 'other'
}

// ---------------------------------------------------------------------------------------------
// The cases
// ---------------------------------------------------------------------------------------------

const FAULTS = ['SIGSEGV', 'SIGBUS', 'SIGFPE', 'SIGILL']
const KEEPALIVE_NAMES = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGUSR2', 'SIGWINCH', 'SIGQUIT', 'SIGALRM', 'SIGTSTP', 'SIGURG', 'SIGKILL', 'SIGSTOP']

const cases = []
const defcase = (c) => cases.push(c)
const withoutOptions = (o) => (isObject(o) ? o : {})

defcase({
  name: 'getpgid',
  fn: 'getpgid(pid?)',
  arb: () => fc.oneof(fc.constant([]), fc.tuple(A.pid())),
  async run(t, args) {
    const a = args.map((x) => t.resolve(x))
    const fails = pidOrSelfRule(a[0], 'pid')
    const target = a[0] === undefined || a[0] === 0 ? process.pid : a[0]
    const before = fails.length ? null : t.w.proc(target)
    return t.call({ fails }, () => t.w.r.getpgid(...a), {
      ok: (v) =>
        !Number.isInteger(v) || v < 0 ? `returned ${show(v)}` : before && v !== before.pgid ? `returned ${v}; /proc says ${before.pgid}` : null,
      sys: (e) => (before && t.w.exists(target) ? `${e.code} for a process that exists` : e.code === 'ESRCH' ? null : `${e.code}, expected ESRCH`),
    })
  },
})

defcase({
  name: 'setpgid',
  fn: 'setpgid(pid?, pgid?)',
  arb: () => fc.oneof(fc.constant([]), fc.tuple(A.pid()), fc.tuple(A.pid(), A.pid())),
  async run(t, args) {
    const a = args.map((x) => t.resolve(x))
    const fails = [...pidOrSelfRule(a[0], 'pid'), ...pidOrSelfRule(a[1], 'pgid')]
    const self = a[0] === undefined || a[0] === 0 || a[0] === process.pid
    // Moving this process into another group of its session is the call doing its job: not fuzzed.
    if (!fails.length && self && a[1] && a[1] !== process.pid && a[1] !== t.w.ownPgid && t.w.groupInSession(a[1])) t.skip()
    const mismatch = await t.call({ fails }, () => t.w.r.setpgid(...a), {
      ok: (v) => (v === undefined ? null : `returned ${show(v)}`),
    })
    return mismatch ?? t.w.checkGroupsUnchanged()
  },
})

defcase({
  name: 'kill',
  fn: 'kill(pid, signal?, options?)',
  arb: () => fc.tuple(A.pid(), fc.oneof(A.signal(), fc.constant(undefined)), A.selfOptions()),
  async run(t, [rp, rs, o]) {
    const p = t.resolve(rp)
    const s = t.resolve(rs)
    const fails = [...pidRule(p), ...signalRule(s === undefined ? 'SIGTERM' : s)]
    const lenient = optionsRule(o)
    if (!fails.length && t.w.isSelf(p) && o?.allowSelf !== true) fails.push(...violation('self', SELF))
    if (!fails.length && t.w.protectedPid(p)) t.skip() // a valid signal to a canary: the call's job, not a stray
    const before = fails.length ? null : t.w.proc(p)
    return t.call({ fails, lenient }, () => t.w.r.kill(p, s, o), {
      ok: () => {
        t.sent([p], signalNumber(s ?? 'SIGTERM'))
        return before || t.w.proc(p) ? null : `reported success for pid ${p}, which does not exist`
      },
      sys: (e) => (!before && e.code !== 'ESRCH' ? `${e.code} for a pid that does not exist, expected ESRCH` : null),
    })
  },
})

defcase({
  name: 'killpg',
  fn: 'killpg(pgid, signal?, options?)',
  arb: () => fc.tuple(A.pid(), fc.oneof(A.signal(), fc.constant(undefined)), A.selfOptions()),
  async run(t, [rg, rs, o]) {
    const g = t.resolve(rg)
    const s = t.resolve(rs)
    const fails = [...pidRule(g, 'pgid'), ...signalRule(s === undefined ? 'SIGTERM' : s)]
    const lenient = optionsRule(o)
    if (!fails.length && g === t.w.ownPgid && o?.allowSelf !== true) fails.push(...violation('own group', SELF))
    if (!fails.length && t.w.protectedGroup(g)) t.skip()
    const existed = !fails.length && t.w.groupExists(g)
    return t.call({ fails, lenient }, () => t.w.r.killpg(g, s, o), {
      ok: () => {
        if (g === t.w.S.pgid) t.sent(t.w.S.pids, signalNumber(s ?? 'SIGTERM'))
        return existed || t.w.groupExists(g) ? null : `reported success for group ${g}, which has no member`
      },
      sys: (e) => (!existed && e.code !== 'ESRCH' ? `${e.code} for a group that does not exist, expected ESRCH` : null),
    })
  },
})

defcase({
  name: 'setParentDeathSignal',
  fn: 'setParentDeathSignal(signal | null) (+ getParentDeathSignal)',
  arb: () => fc.tuple(fc.oneof(A.signal(), fc.constant(null))),
  async run(t, [rs]) {
    const s = t.resolve(rs)
    const fails = s === null ? [] : signalRule(s)
    const { r } = t.w
    try {
      return await t.call({ fails }, () => r.setParentDeathSignal(s), {
        ok: () => {
          const want = s === null ? 0 : signalNumber(s)
          const got = r.getParentDeathSignal()
          const gotNumber = got === null ? 0 : SIGNALS[got]
          return gotNumber === want ? null : `armed ${show(got)}, expected signal ${want}`
        },
      })
    } finally {
      r.setParentDeathSignal(null)
    }
  },
})

defcase({
  name: 'reapAdopted',
  fn: 'reapAdopted(pid)',
  arb: () => fc.tuple(A.pid()),
  async run(t, [rp]) {
    const p = t.resolve(rp)
    const fails = pidRule(p)
    const st = fails.length ? null : t.w.proc(p)
    const ourChild = st !== null && st.ppid === process.pid
    if (ourChild && st.state === 'Z') t.skip() // libuv's to reap: taking it would be the caller's documented misuse
    return t.call({ fails }, () => t.w.r.reapAdopted(p), {
      ok: (v) => (typeof v !== 'boolean' ? `returned ${show(v)}` : v && !ourChild ? `reaped ${p}, which is no child of ours` : null),
      sys: (e) => (ourChild && t.w.exists(p) ? `${e.code} for a child of ours` : e.code === 'ECHILD' ? null : `${e.code}, expected ECHILD`),
    })
  },
})

defcase({
  name: 'openProcess',
  fn: 'openProcess(pid, options?)',
  arb: () => fc.tuple(A.pid(), A.selfOptions()),
  async run(t, [rp, o]) {
    const p = t.resolve(rp)
    const fails = pidRule(p)
    const lenient = optionsRule(o)
    if (!fails.length && t.w.isSelf(p) && o?.allowSelf !== true) fails.push(...violation('self', SELF))
    const before = fails.length ? null : t.w.proc(p)
    return t.call({ fails, lenient }, () => t.w.r.openProcess(p, o), {
      ok: (h) => {
        const bad = !(h instanceof t.w.r.ProcessHandle) || h.pid !== p ? `returned ${show(h)}` : null
        h?.close?.()
        return bad
      },
      sys: (e) => (!before && e.code !== 'ESRCH' ? `${e.code} for a pid that does not exist, expected ESRCH` : null),
    })
  },
})

defcase({
  name: 'ProcessHandle#signal',
  fn: 'openProcess(pid).signal(signal?)',
  arb: () => fc.tuple(fc.constantFrom('S', 'S2', 'closed', 'exited'), fc.oneof(A.signal(), fc.constant(undefined))),
  async run(t, [which, rs]) {
    const s = t.resolve(rs)
    const { w } = t
    const member = which === 'S' ? w.S.pids[0] : w.S.pids[1]
    let handle
    if (which === 'exited') handle = w.exitedHandle
    else {
      handle = t.track(w.r.openProcess(member))
      if (which === 'closed') handle.close()
    }
    const fails = signalRule(s === undefined ? 'SIGTERM' : s)
    return t.call({ fails }, () => handle.signal(s), {
      ok: () => {
        if (which === 'closed' || which === 'exited') return `reported success on a handle that is ${which}`
        t.sent([member], signalNumber(s ?? 'SIGTERM'))
        return null
      },
      sys: (e) => {
        const want = which === 'closed' ? 'EBADF' : which === 'exited' ? 'ESRCH' : null
        return e.code === want ? null : `${e.code} on a ${which === 'S' || which === 'S2' ? 'live' : which} handle${want ? `, expected ${want}` : ''}`
      },
    })
  },
})

const WAIT_OBJECTS = ['Schild', 'exitedChild', 'unspawnedChild', 'Shandle', 'exitedHandle', 'closedHandle']

defcase({
  name: 'watchExit',
  fn: 'watchExit(target, { timeoutMs, signal, ref })',
  arb: () =>
    fc.tuple(
      A.target(PIDS, WAIT_OBJECTS),
      A.options({ timeoutMs: A.ms(), signal: A.abort(), ref: fc.constantFrom(undefined, true, false, 'no') }),
    ),
  async run(t, [rt, ro]) {
    const { w } = t
    const target = t.resolve(rt)
    const o = t.options(ro)
    const fails = optionsRule(o)
    if (isObject(o)) fails.push(...msRule(o.timeoutMs, 'timeoutMs', true), ...abortRule(o.signal, 'signal'))
    const kind = targetKind(w, target)
    let pid = null
    if (kind === 'child') pid = target.pid ?? 0
    else if (kind === 'handle') pid = target.pid
    else {
      fails.push(...(typeof target === 'number' ? pidRule(target, 'target') : violation('target', TYPE)))
      // An already aborted signal may be reported first: both are refusals before any syscall.
      if (!fails.length && w.isSelf(target)) fails.push(...violation('self', SELF, ...(isObject(o) && o.signal?.aborted === true ? ['ABORT_ERR'] : [])))
      pid = target
    }
    const also = ['ERR_REAPKIT_NOT_SPAWNED', 'ERR_REAPKIT_HANDLE_CLOSED']
    if (isObject(o) && typeof o.timeoutMs === 'number' && Number.isFinite(o.timeoutMs)) also.push('ETIMEDOUT')
    if (isObject(o) && o.signal !== undefined) also.push('ABORT_ERR')
    const existed = kind !== 'other' || fails.length > 0 || w.exists(pid)
    return t.call({ fails, also, pendingOk: true }, () => w.r.watchExit(target, o), {
      ok: (info, late) => {
        if (!isObject(info) || info.pid !== pid) return `resolved ${show(info)}, expected the exit of pid ${pid}`
        if (!late && kind === 'other' && w.alive(pid)) return `resolved while pid ${pid} still runs`
        return null
      },
      pending: () => (existed ? null : `still waiting for pid ${pid}, which does not exist`),
    })
  },
})

defcase({
  name: 'watchParent',
  fn: 'watchParent({ deathSignal, pollIntervalMs, expectedParentPid, ref })',
  arb: () =>
    fc.tuple(
      A.options({
        deathSignal: fc.oneof(A.signal(), fc.constantFrom(false, null)),
        pollIntervalMs: A.ms(),
        expectedParentPid: A.pid(),
        ref: fc.constantFrom(undefined, true, false),
      }),
    ),
  async run(t, [ro]) {
    const { w } = t
    const o = t.options(ro)
    const fails = optionsRule(o)
    if (isObject(o)) {
      const poll = o.pollIntervalMs
      const pollFails = msRule(poll, 'pollIntervalMs')
      fails.push(...pollFails)
      if (!pollFails.length && poll !== undefined && poll < 1) fails.push(...violation('pollIntervalMs', RANGE))
      fails.push(...deathSignalRule(o.deathSignal, 'deathSignal'))
      const ep = o.expectedParentPid
      if (ep !== undefined && !(typeof ep === 'number' && Number.isInteger(ep) && ep >= 1 && ep <= MAX_PID)) {
        fails.push(...violation('expectedParentPid', RANGE, TYPE))
      }
    }
    const opts = withoutOptions(o)
    const want = w.r.capabilities().pdeathsig && opts.deathSignal !== undefined ? deathSignalNumber(opts.deathSignal) : 0 // default: nothing armed
    try {
      return await t.call({ fails }, () => w.r.watchParent(o), {
        ok: (watcher) => {
          try {
            const got = watcher.deathSignal === null ? 0 : SIGNALS[watcher.deathSignal]
            if (got !== want) return `deathSignal ${show(watcher.deathSignal)}, expected signal ${want}`
            const armed = w.r.getParentDeathSignal()
            if ((armed === null ? 0 : SIGNALS[armed]) !== want) return `armed ${show(armed)}, expected signal ${want}`
            const parent = opts.expectedParentPid ?? process.ppid
            if (watcher.parentPid !== parent) return `parentPid ${watcher.parentPid}, expected ${parent}`
            if (watcher.fired !== (parent !== process.ppid)) return `fired is ${watcher.fired} with expectedParentPid ${show(opts.expectedParentPid)}`
          } finally {
            watcher.close()
          }
          const left = w.r.getParentDeathSignal()
          return left === null ? null : `close() left ${left} armed`
        },
      })
    } finally {
      w.r.setParentDeathSignal(null)
    }
  },
})

defcase({
  name: 'spawn',
  fn: 'spawn(cmd, args?, { parentDeathSignal, killSignal, timeout, group })',
  arb: () =>
    fc.tuple(
      fc.constantFrom('args', 'no-args', 'null-args'),
      A.options({
        parentDeathSignal: fc.oneof(A.signal(), fc.constantFrom(false, null)),
        killSignal: fc.oneof(A.signal(), fc.constant(null)),
        timeout: A.ms(),
        group: fc.constantFrom(undefined, true, false, 'yes', 1),
      }),
    ),
  async run(t, [form, ro]) {
    const { w } = t
    const o = t.options(ro)
    // null: refused by Node's spawn, taken as "no options" by reapkit's (either is clear enough).
    const fails = o === null ? [] : optionsRule(o)
    const lenient = o === null ? violation('options', TYPE) : []
    const opts = withoutOptions(o)
    fails.push(...booleanRule(opts.group, 'group'), ...deathSignalRule(opts.parentDeathSignal, 'parentDeathSignal'))
    // Node's own options, passed through: validated by child_process.spawn before it forks.
    const k = opts.killSignal
    if (k !== undefined && k !== null) {
      if (typeof k === 'string' || typeof k === 'number') {
        // Node takes names in any case ('sigterm'), and numbers other than 0.
        if (!(typeof k === 'string' ? Object.hasOwn(SIGNALS, k.toUpperCase()) : SIGNAL_NUMBERS.has(k))) fails.push(...violation('killSignal', UNKNOWN))
      } else fails.push(...violation('killSignal', TYPE))
    }
    const to = opts.timeout
    if (to !== undefined && to !== null && !(Number.isInteger(to) && to >= 0)) fails.push(...violation('timeout', RANGE, TYPE))
    const full = isObject(o) ? { ...o, stdio: 'ignore' } : o
    const call = () => (form === 'args' ? w.r.spawn('true', [], full) : form === 'no-args' ? w.r.spawn('true', full) : w.r.spawn('true', null, full))
    const wantPds = w.r.capabilities().pdeathsig ? deathSignalNumber(opts.parentDeathSignal, 'SIGKILL') : 0
    // Node's own `timeout` sends its `killSignal`, which may stop the child instead (SIGSTOP...).
    const nodeTimer = typeof to === 'number' && to > 0
    return t.call({ fails, lenient }, call, {
      ok: async (child) => {
        if (!child || typeof child.pid !== 'number') return `returned ${show(child)} without a pid`
        t.adopt(child)
        const info = w.r.spawnedInfo(child)
        const wantPgid = opts.group === false ? null : child.pid
        if (!info || info.pgid !== wantPgid) return `spawnedInfo().pgid ${show(info?.pgid)}, expected ${wantPgid}`
        const got = info.parentDeathSignal === null ? 0 : SIGNALS[info.parentDeathSignal]
        if (got !== wantPds) return `spawnedInfo().parentDeathSignal ${show(info.parentDeathSignal)}, expected signal ${wantPds}`
        return (await w.exited(child, nodeTimer ? 1000 : 5000)) || nodeTimer ? null : `"true" did not exit within 5 s`
      },
    })
  },
})

const STOP_OBJECTS = ['victimChild', 'victimHandle', 'Schild', 'exitedChild', 'unspawnedChild', 'exitedHandle', 'closedHandle']

defcase({
  name: 'killProcessGracefully',
  fn: 'killProcessGracefully(target, { signal, killSignal, graceMs, confirmMs, abortSignal, group, allowSelf })',
  arb: () =>
    fc.tuple(
      fc.oneof(
        { weight: 8, arbitrary: A.target([...PIDS, 'victim', 'victim', 'victim'], STOP_OBJECTS) },
        // A ChildProcess-shaped object: its pid is input like any other.
        { weight: 1, arbitrary: A.pid([...PIDS, 'victim']).map((p) => new Ref('fakeChild', 'id', 0, p)) },
      ),
      A.options({
        signal: fc.oneof(A.signal(), fc.constant(null)),
        killSignal: fc.oneof(A.signal(), fc.constant(null)),
        graceMs: A.ms(),
        confirmMs: A.ms(),
        abortSignal: A.abort(),
        group: fc.constantFrom(undefined, true, false, 'yes', 0),
        allowSelf: fc.constantFrom(undefined, false, 'yes', 1),
      }),
    ),
  async run(t, [rt, ro]) {
    const { w } = t
    const target = t.resolve(rt)
    const o = t.options(ro)
    const fails = optionsRule(o)
    const lenient = []
    if (isObject(o)) {
      stopSignalRules(o, fails, lenient)
      fails.push(
        ...msRule(o.graceMs, 'graceMs'),
        ...msRule(o.confirmMs, 'confirmMs'),
        ...abortRule(o.abortSignal, 'abortSignal'),
        ...booleanRule(o.group, 'group'),
        ...booleanRule(o.allowSelf, 'allowSelf'),
      )
    }
    const kind = targetKind(w, target)
    let pid
    if (kind === 'child') {
      pid = target.pid
      if (pid === undefined) fails.push(...violation('child', VALUE))
      else fails.push(...pidRule(pid, 'child.pid').map((f) => ({ ...f, codes: [...f.codes, VALUE] })))
    } else if (kind === 'handle') {
      pid = target.pid
      // A closed handle no longer proves which process its pid names: refused, never pinned again by number.
      if (target.closed) fails.push(...violation('handle', VALUE))
    } else {
      pid = target
      fails.push(...pidRule(target, 'target'))
    }
    if (!fails.length && w.isSelf(pid)) fails.push(...violation('self', SELF))
    const opts = withoutOptions(o)
    const leads = !fails.length && w.proc(pid)?.pgid === pid
    if (!fails.length && (w.protectedPid(pid) || ((leads || opts.group === true) && w.protectedGroup(pid)))) t.skip()
    if (!fails.length && w.S.pids.includes(pid)) t.taintS() // blocked: only SIGKILL ends it, after the grace
    const existed = !fails.length && w.exists(pid)
    return t.call({ fails, lenient, pendingOk: true, waitMs: 60 }, () => w.r.killProcessGracefully(target, o), {
      ok: (res) => {
        if (!isObject(res) || res.pid !== pid) return `resolved ${show(res)}, expected a KillResult for pid ${pid}`
        if (!Array.isArray(res.survivors) || typeof res.escalated !== 'boolean') return `malformed result ${show(res)}`
        const sent = signalsSentRule(res.signalsSent)
        if (sent) return sent
        if (!existed && res.signalsSent.length > 0 && kind !== 'child' && kind !== 'handle') return `signalled ${show(res.signalsSent)} for pid ${pid}, which was not running`
        return null
      },
    })
  },
})

defcase({
  name: 'groupMembers',
  fn: 'groupMembers(pgid)',
  arb: () => fc.tuple(A.pid()),
  async run(t, [rg]) {
    const { w } = t
    const g = t.resolve(rg)
    const fails = pidRule(g, 'pgid')
    const known = g === w.B.pgid ? w.B.pids : g === w.S.pgid ? w.S.pids.filter((p) => w.alive(p)) : null
    return t.call({ fails }, () => w.r.groupMembers(g), {
      ok: (members) => {
        if (!Array.isArray(members) || !members.every(Number.isInteger)) return `returned ${show(members)}`
        if (known && show([...members].sort()) !== show([...known].sort())) return `returned ${show(members)}, expected ${show(known)}`
        const stranger = members.find((m) => w.proc(m) && w.proc(m).pgid !== g)
        return stranger ? `listed ${stranger}, which is not in group ${g}` : null
      },
    })
  },
})

defcase({
  name: 'closeClient',
  fn: 'closeClient(child, { closeTimeoutMs, graceMs, signal, killSignal, close })',
  arb: () =>
    fc.tuple(
      fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom(new Ref('catVictim'), new Ref('sleepVictim')) },
        { weight: 1, arbitrary: fc.constantFrom(new Ref('exitedChild'), new Ref('unspawnedChild'), {}, null, 5, 'child') },
      ),
      A.options({
        closeTimeoutMs: A.ms(),
        graceMs: A.ms(),
        signal: fc.oneof(A.signal(), fc.constant(undefined)),
        killSignal: fc.oneof(A.signal(), fc.constant(undefined)),
        close: fc.constantFrom(undefined, undefined, new Ref('noop'), 'close', 5),
      }),
    ),
  async run(t, [rc, ro]) {
    const { w } = t
    const child = t.resolve(rc)
    const o = t.options(ro)
    const fails = []
    const kind = targetKind(w, child)
    if (kind !== 'child') fails.push(...violation('child', TYPE))
    else if (child.pid === undefined) fails.push(...violation('child', VALUE))
    fails.push(...optionsRule(o))
    const lenient = []
    if (isObject(o)) {
      if (o.close !== undefined && typeof o.close !== 'function') fails.push(...violation('close', TYPE))
      fails.push(...msRule(o.closeTimeoutMs, 'closeTimeoutMs'), ...msRule(o.graceMs, 'graceMs'))
      stopSignalRules(o, fails, lenient)
    }
    const stdin = kind === 'child' ? child.stdin : null
    const mismatch = await t.call({ fails, lenient, pendingOk: true, waitMs: 40 }, () => w.r.closeClient(child, o), {
      ok: (report) => {
        if (!isObject(report) || report.pid !== child.pid) return `resolved ${show(report)}, expected a CloseReport for pid ${child.pid}`
        if (!['graceful', 'forced', 'already-exited'].includes(report.phase)) return `phase ${show(report.phase)}`
        return signalsSentRule(report.signalsSent)
      },
    })
    // Refused input must be refused before anything is done to the child.
    if (fails.length && stdin && stdin.writableEnded) return mismatch ?? 'refused the input, but only after ending the child\'s stdin'
    return mismatch
  },
})

defcase({
  name: 'Supervisor',
  fn: 'new Supervisor({ closeTimeoutMs, graceMs, shutdownTimeoutMs }), #terminate(pidOrRequestId, { graceMs })',
  arb: () =>
    fc.tuple(
      A.options({ closeTimeoutMs: A.ms(), graceMs: A.ms(), shutdownTimeoutMs: A.ms() }),
      fc.oneof(
        { weight: 3, arbitrary: A.pid([...PIDS, 'supervised', 'supervised']) },
        { weight: 1, arbitrary: fc.constantFrom(new Ref('supervisedReq'), new Ref('supervisedReq'), 'fuzz-req-0', 'fuzz-req') },
      ),
      A.options({ graceMs: A.ms(), reason: fc.constantFrom(undefined, 'fuzz') }),
    ),
  async run(t, [rc, rid, rto]) {
    const { w } = t
    const c = t.options(rc)
    const id = t.resolve(rid)
    const to = t.options(rto)
    const ctorFails = optionsRule(c)
    if (isObject(c)) ctorFails.push(...msRule(c.closeTimeoutMs, 'closeTimeoutMs'), ...msRule(c.graceMs, 'graceMs'), ...msRule(c.shutdownTimeoutMs, 'shutdownTimeoutMs'))
    const toFails = [...optionsRule(to), ...(isObject(to) ? msRule(to.graceMs, 'graceMs') : [])]
    let sup = null
    // 1. The constructor's bounds.
    const full = isObject(c) ? { ...c, backstop: false } : c
    const m1 = await t.call({ fails: ctorFails }, () => (sup = new w.r.Supervisor(full)), {
      ok: (s) => {
        const given = withoutOptions(c)
        const close = given.closeTimeoutMs ?? 2000
        const grace = given.graceMs ?? 9000
        const cap = given.shutdownTimeoutMs ?? close + grace + 1000
        if (s.closeTimeoutMs !== close || s.graceMs !== grace || s.shutdownTimeoutMs !== cap) {
          return `bounds ${s.closeTimeoutMs}/${s.graceMs}/${s.shutdownTimeoutMs}, expected ${close}/${grace}/${cap}`
        }
        return null
      },
    })
    if (m1) {
      sup?.dispose?.()
      return `constructor: ${m1}`
    }
    // 2. An empty supervisor refuses any id.
    if (sup) {
      const m2 = await t.call(
        { fails: [{ why: 'not supervised', codes: [NOT_SUPERVISED, ...(idOk(id) ? [] : [TYPE]), ...toFails.flatMap((f) => f.codes)] }] },
        () => sup.terminate(id, to),
      )
      sup.dispose()
      if (m2) return `terminate on an empty supervisor: ${m2}`
    }
    // 3. The shared supervisor: its own processes only, and the grace bound.
    const registered = w.supervisedIds.has(id)
    const fails = registered ? toFails : [{ why: 'not supervised', codes: [NOT_SUPERVISED, ...(idOk(id) ? [] : [TYPE]), ...toFails.flatMap((f) => f.codes)] }]
    const m3 = await t.call({ fails, pendingOk: true, waitMs: 200 }, () => w.sup.terminate(id, to), {
      ok: (res) => (isObject(res) && Array.isArray(res.signalsSent) ? null : `resolved ${show(res)}`),
    })
    if (registered) w.supervisedDirty = true
    return m3 ? `terminate: ${m3}` : null
  },
})

defcase({
  name: 'createKeepalive',
  fn: 'createKeepalive({ graceMs, hookTimeoutMs, flushTimeoutMs, signals })',
  arb: () =>
    fc.tuple(
      A.options({
        graceMs: A.ms(),
        hookTimeoutMs: A.ms(),
        flushTimeoutMs: A.ms(),
        signals: fc.oneof(
          fc.constantFrom(undefined, false),
          fc.array(fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...KEEPALIVE_NAMES) }, { weight: 1, arbitrary: A.signal() }), { maxLength: 3 }),
          junk,
        ),
        parentDeath: fc.constantFrom(undefined, true, false),
      }),
    ),
  async run(t, [ro]) {
    const { w } = t
    const o = t.options(ro)
    // Listening to a fault signal would replace V8's own handler for this process: not drawn.
    if (isObject(o) && Array.isArray(o.signals) && o.signals.some((x) => FAULTS.includes(x))) t.skip()
    const fails = optionsRule(o)
    const lenient = []
    if (isObject(o)) {
      fails.push(...msRule(o.graceMs, 'graceMs'), ...msRule(o.hookTimeoutMs, 'hookTimeoutMs'), ...msRule(o.flushTimeoutMs, 'flushTimeoutMs'))
      const s = o.signals
      if (s === null) lenient.push(...violation('signals', TYPE)) // taken as "the default", like other nulls
      else if (s !== undefined && s !== false && !Array.isArray(s)) fails.push(...violation('signals', TYPE))
      if (Array.isArray(s)) {
        for (const x of s) {
          if (typeof x !== 'string' || !Object.hasOwn(SIGNALS, x)) fails.push(...violation('signals[]', UNKNOWN, TYPE))
          else if (x === 'SIGKILL' || x === 'SIGSTOP') fails.push(...violation('signals[] uncatchable', UNKNOWN, 'EINVAL', 'ERR_INVALID_ARG_VALUE'))
        }
      }
    }
    // Never let it end this process or read our stdin: those are not the inputs under test.
    const full = isObject(o) ? { ...o, stdin: false, exit: false, finalLine: false } : o
    const before = w.listenerCounts()
    const mismatch = await t.call({ fails, lenient }, () => w.r.createKeepalive(full), {
      ok: (k) => {
        const bad = typeof k?.dispose !== 'function' || k.state !== 'running' ? `returned ${show(k)}` : null
        k?.dispose?.()
        return bad
      },
    })
    const leaked = w.restoreListeners(before)
    const armed = w.r.getParentDeathSignal()
    w.r.setParentDeathSignal(null)
    return mismatch ?? (leaked ? `left process listeners behind: ${leaked}` : armed !== null ? `left ${armed} armed` : null)
  },
})

defcase({
  name: 'captureProcesses',
  fn: 'reapkit/testing captureProcesses({ killTimeoutMs })',
  arb: () => fc.tuple(A.options({ killTimeoutMs: A.ms() })),
  async run(t, [ro]) {
    const { w } = t
    const o = t.options(ro)
    const fails = [...optionsRule(o), ...(isObject(o) ? msRule(o.killTimeoutMs, 'killTimeoutMs') : [])]
    try {
      return await t.call({ fails }, () => w.testing.captureProcesses(o), {
        ok: (capture) => {
          capture?.stop?.()
          return typeof capture?.survivors === 'function' ? null : `returned ${show(capture)}`
        },
      })
    } finally {
      if (w.r.isChildSubreaper()) w.r.setChildSubreaper(false)
    }
  },
})

defcase({
  name: 'measureReap',
  fn: 'reapkit/testing measureReap(target, stop, { timeoutMs })',
  arb: () =>
    fc.tuple(
      fc.oneof(
        { weight: 4, arbitrary: A.pid() },
        { weight: 1, arbitrary: fc.array(A.pid(), { maxLength: 3 }) },
        { weight: 1, arbitrary: fc.constantFrom(new Ref('Schild'), new Ref('exitedChild'), new Ref('unspawnedChild')) },
      ),
      fc.constantFrom(new Ref('noop'), new Ref('noop'), new Ref('noop'), 'stop', null, undefined),
      A.options({ timeoutMs: A.ms() }),
    ),
  async run(t, [rt, rs, ro]) {
    const { w } = t
    const raw = t.resolve(rt)
    const target = Array.isArray(raw) && !(rt instanceof Ref) ? raw.map((x) => t.resolve(x)) : raw
    const stop = t.resolve(rs)
    const o = t.options(ro)
    const fails = [...optionsRule(o), ...(isObject(o) ? msRule(o.timeoutMs, 'timeoutMs') : [])]
    if (typeof stop !== 'function') fails.push(...violation('stop', TYPE))
    for (const x of Array.isArray(target) ? target : [target]) {
      if (targetKind(w, x) === 'child') fails.push(...(x.pid === undefined ? violation('target', VALUE, TYPE) : []))
      else fails.push(...pidRule(x, 'target'))
    }
    return t.call({ fails, pendingOk: true, waitMs: 5 }, () => w.testing.measureReap(target, stop, o), {
      ok: (fig) => (isObject(fig) && Number.isInteger(fig.processes) && Array.isArray(fig.exits) && Array.isArray(fig.survivors) ? null : `resolved ${show(fig)}`),
    })
  },
})

defcase({
  name: 'StdioClientTransport',
  fn: 'reapkit/mcp new StdioClientTransport(server, { closeTimeoutMs, graceMs }), .start(), .close()',
  arb: () => fc.tuple(A.options({ closeTimeoutMs: A.ms(), graceMs: A.ms() })),
  async run(t, [ro]) {
    const { w } = t
    const o = t.options(ro)
    const fails = [...optionsRule(o)]
    if (isObject(o)) fails.push(...msRule(o.closeTimeoutMs, 'closeTimeoutMs'), ...msRule(o.graceMs, 'graceMs'))
    // A bad bound must be refused when it is given, not by close(), when refusing is too late.
    let transport = null
    const m1 = await t.call({ fails }, () => (transport = new w.mcp.StdioClientTransport({ command: 'cat', stderr: 'ignore' }, o)), {
      ok: (tr) => (typeof tr?.start === 'function' ? null : `returned ${show(tr)}`),
    })
    if (!transport) return m1
    // Constructed (rightly or not): start the server; close() must then stop it.
    const started = await t.call({ fails: [], waitMs: 5000 }, () => transport.start())
    if (transport.pid) t.adoptPid(transport.pid)
    if (started) return m1 ?? `start(): ${started}`
    const pid = transport.pid
    const m2 = await t.call({ fails: [], pendingOk: true, waitMs: 2000 }, () => transport.close())
    const left = pid && w.alive(pid) ? `; the server (pid ${pid}) is left running` : ''
    if (pid && w.alive(pid)) process.kill(pid, 'SIGKILL')
    return m1 ? m1 + left : m2 ? `close(): ${m2}${left}` : null
  },
})

module.exports = {
  cases,
  FAULTS,
  Ref,
  TRANSFORMS,
  DRAWN,
  SIGNALS,
  VALIDATION,
  ERROR_CLASS,
  show,
  isObject,
  signalNumber,
}
