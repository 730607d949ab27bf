/**
 * withHttpKeepalive's options, checked before anything is touched: a bad one leaves the server as it
 * was. Type-only imports from the entry (lib/mcp/http/keepalive.ts): a value import of '../index' here would
 * bundle a second copy of the core into reapkit/mcp (the build makes only './index' external).
 */
import type { Server } from 'node:http'
import { rangeError, typeError } from '../../ground/errors'
import { describe, validateMs, validateOptions } from '../../ground/validate'
import type { Keepalive, KeepaliveOptions, KeepaliveReport as ShutdownReport } from '../../index'
import type { HttpKeepaliveOptions } from './keepalive'
import { isDrained } from './requests'

/** The default grace of an HTTP server's drain: under Kubernetes' default 30 s terminationGracePeriodSeconds with room for the close. */
export const HTTP_DRAIN_GRACE_MS_DEFAULT = 20_000

/** The options as the drain uses them, defaults applied. */
export interface HttpSettings {
  readonly readinessPath: string | undefined
  readonly livenessPath: string | undefined
  readonly retryAfter: number
  readonly streamCloseTimeoutMs: number
  readonly probePort: number | undefined
  readonly probeHost: string | undefined
  readonly stopAccepting: 'after-calls' | 'at-drain'
  readonly mcp: HttpKeepaliveOptions['mcp']
  /** The user's onShutdown hooks, added after the close (with a keepalive of our own only). */
  readonly hooks: ReadonlyArray<(report: ShutdownReport) => unknown>
}

/** The keepalive options withHttpKeepalive passes on to createKeepalive() (and refuses beside its own `keepalive`). */
const KEEPALIVE_OPTIONS = ['graceMs', 'signals', 'stdin', 'parentDeath', 'exit', 'onDrain', 'onShutdown', 'hookTimeoutMs', 'flushTimeoutMs', 'finalLine', 'logger'] as const

function validatePath(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || !value.startsWith('/')) {
    throw typeError('ERR_INVALID_ARG_VALUE', `The "${name}" option must be a path that starts with "/". Received ${describe(value)}`)
  }
  return value
}

function validateServer(server: Server): void {
  if (typeof server !== 'object' || server === null || typeof server.emit !== 'function' || typeof server.close !== 'function') {
    throw typeError('ERR_INVALID_ARG_TYPE', 'withHttpKeepalive() takes a node:http (or https) Server, as app.listen() returns')
  }
  if (isDrained(server)) {
    throw Object.assign(new Error('This server is already under withHttpKeepalive()'), { code: 'ERR_REAPKIT_ALREADY_DRAINED' })
  }
}

/** The HTTP-side options (paths, probe port, timing), in the order they are documented. */
function httpSettings(options: HttpKeepaliveOptions): Omit<HttpSettings, 'hooks'> {
  const readinessPath = validatePath(options.readinessPath ?? (options.probePort !== undefined ? '/readyz' : undefined), 'readinessPath')
  const livenessPath = validatePath(options.livenessPath ?? (options.probePort !== undefined ? '/livez' : undefined), 'livenessPath')
  const retryAfter = options.retryAfterSeconds ?? 5
  if (!Number.isInteger(retryAfter) || retryAfter < 0) {
    throw rangeError('ERR_OUT_OF_RANGE', `The "retryAfterSeconds" option must be an integer >= 0. Received ${describe(retryAfter)}`)
  }
  const streamCloseTimeoutMs = validateMs(options.streamCloseTimeoutMs, 'streamCloseTimeoutMs') ?? 1000
  const { probePort, probeHost, mcp } = options
  if (probePort !== undefined && (!Number.isInteger(probePort) || probePort < 0 || probePort > 65535)) {
    throw rangeError('ERR_OUT_OF_RANGE', `The "probePort" option must be a port number (0 to 65535). Received ${describe(probePort)}`)
  }
  if (probeHost !== undefined && typeof probeHost !== 'string') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "probeHost" option must be a string. Received ${describe(probeHost)}`)
  }
  const stopAccepting = options.stopAccepting ?? 'after-calls'
  if (stopAccepting !== 'after-calls' && stopAccepting !== 'at-drain') {
    throw typeError('ERR_INVALID_ARG_VALUE', `The "stopAccepting" option must be 'after-calls' or 'at-drain'. Received ${describe(stopAccepting)}`)
  }
  if (mcp !== undefined && typeof mcp !== 'object' && typeof mcp !== 'function') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "mcp" option must be what to close (a handler, transports, or a function). Received ${describe(mcp)}`)
  }
  return { readinessPath, livenessPath, retryAfter, streamCloseTimeoutMs, probePort, probeHost, stopAccepting, mcp }
}

/**
 * What withHttpKeepalive starts from: its settings, and either the keepalive it was given or the
 * options of one of its own (createKeepalive() checks those, the last check before the server is touched).
 */
export type ResolvedOptions = { settings: HttpSettings } & ({ keepalive: Keepalive; own: null } | { keepalive: null; own: KeepaliveOptions })

/** Checks the server and every option, in that order. */
export function resolveOptions(server: Server, input: HttpKeepaliveOptions): ResolvedOptions {
  const options = validateOptions(input)
  validateServer(server)
  const http = httpSettings(options)
  const hooks = options.onShutdown === undefined ? [] : Array.isArray(options.onShutdown) ? options.onShutdown : [options.onShutdown]
  if (!hooks.every((hook) => typeof hook === 'function')) throw typeError('ERR_INVALID_ARG_TYPE', 'The "onShutdown" option must be a function or an array of functions')
  if (options.onDrain !== undefined && typeof options.onDrain !== 'function') throw typeError('ERR_INVALID_ARG_TYPE', 'The "onDrain" option must be a function')
  if (options.keepalive === undefined) return { settings: { ...http, hooks }, keepalive: null, own: ownKeepaliveOptions(options) }
  return { settings: { ...http, hooks: [] }, keepalive: validateKeepalive(options), own: null }
}

/** A keepalive given by the caller: one from createKeepalive(), with no keepalive options beside it. */
function validateKeepalive(options: HttpKeepaliveOptions): Keepalive {
  const { keepalive } = options
  if (typeof keepalive !== 'object' || keepalive === null || typeof (keepalive as Keepalive).onDrain !== 'function') {
    throw typeError('ERR_INVALID_ARG_TYPE', 'The "keepalive" option must be a keepalive from createKeepalive()')
  }
  const clash = KEEPALIVE_OPTIONS.filter((name) => options[name] !== undefined)
  if (clash.length > 0) throw typeError('ERR_INVALID_ARG_COMBINATION', `Give ${clash.join(', ')} to createKeepalive(), not next to the "keepalive" option`)
  return keepalive as Keepalive
}

/**
 * The options of a keepalive of our own: not started by stdin end (a container's stdin is often
 * /dev/null, which ends at once) nor by the parent's death; onShutdown is left out (the hooks are
 * added after the close, so that the streams end before the user's hooks run).
 */
function ownKeepaliveOptions(options: HttpKeepaliveOptions): KeepaliveOptions {
  const own: KeepaliveOptions = { stdin: false, parentDeath: false, graceMs: options.graceMs ?? HTTP_DRAIN_GRACE_MS_DEFAULT }
  for (const name of KEEPALIVE_OPTIONS) {
    const value = options[name]
    if (value !== undefined && name !== 'graceMs' && name !== 'onShutdown') Object.assign(own, { [name]: value })
  }
  return own
}
