/**
 * Ready checks to hand to spawn's `ready.check` (or `health.check`): an HTTP probe. (An MCP
 * server's readiness is its `initialize` answered: reapkit/mcp's mcpPingHealthCheck over the Client
 * that connected in the 'spawn' event passes once it is.)
 */
import { typeError } from '../../ground/errors'
import { describe } from '../../ground/validate'
import type { HealthCheckContext } from './health'

export interface HttpProbeOptions {
  /** Which status codes pass. Default: 200-399. */
  ok?: (status: number) => boolean
}

/**
 * A check that GETs `url` and passes on a status `ok` accepts. The request ends with the check's
 * signal (its timeout, or the child's stop); redirects are not followed (a 3xx passes by default).
 */
export function httpProbe(url: string | URL, options: HttpProbeOptions = {}): (context: HealthCheckContext) => Promise<void> {
  let target: URL
  try {
    target = new URL(url)
  } catch {
    throw typeError('ERR_INVALID_ARG_VALUE', `The "url" argument must be an http: or https: URL. Received ${describe(url)}`)
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw typeError('ERR_INVALID_ARG_VALUE', `The "url" argument must be an http: or https: URL. Received ${describe(String(url))}`)
  }
  const ok = options.ok ?? ((status: number) => status >= 200 && status < 400)
  if (typeof ok !== 'function') throw typeError('ERR_INVALID_ARG_TYPE', 'The "ok" option must be a function')
  return async ({ signal }) => {
    const response = await fetch(target, { signal, redirect: 'manual' })
    await response.body?.cancel()
    if (!ok(response.status)) throw new Error(`${target.href} answered ${response.status}`)
  }
}
