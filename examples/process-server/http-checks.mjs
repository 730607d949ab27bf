// The checks of the HTTP front's security model (http.mjs lists them in order): the Host header,
// the Origin, the bearer token. Each answers from the request's headers alone, before any body is
// read.
import { createHash, timingSafeEqual } from 'node:crypto'
import { isIP } from 'node:net'

const LOCAL_NAMES = new Set(['localhost', '127.0.0.1', '[::1]'])
const sha256 = (s) => createHash('sha256').update(s, 'utf8').digest()

/** Whether `host` (an address or a name to bind) is a loopback one. */
export function isLoopback(host) {
  if (host === 'localhost') return true
  if (isIP(host) === 4) return host.startsWith('127.')
  return host === '::1' || host.startsWith('::ffff:127.')
}

/** The hostname of a Host header or an origin's URL ('[::1]' keeps its brackets), or null. */
function hostnameOf(value) {
  try {
    return new URL(value.includes('://') ? value : `http://${value}`).hostname.toLowerCase()
  } catch {
    return null
  }
}

/** `--allow-origin` values as origins (scheme://host[:port]); throws on one that is not. */
export function parseOrigins(values) {
  return values.map((value) => {
    const url = new URL(value) // throws on garbage: a typo must not silently allow nothing
    if (url.origin === 'null') throw new TypeError(`--allow-origin ${value}: not an http(s) origin`)
    return url.origin
  })
}

/**
 * 1. Host: bound to a loopback address, the Host header must name a local name (DNS rebinding);
 * bound elsewhere, any.
 */
export function hostCheck(boundHost) {
  if (!isLoopback(boundHost)) return () => true
  return (req) => LOCAL_NAMES.has(hostnameOf(req.headers.host ?? '') ?? '')
}

/** 2. Origin: on the allow-list, or by default http(s) on a local name (any port). */
export function originCheck(allowOrigins) {
  return (origin) => {
    let url
    try {
      url = new URL(origin)
    } catch {
      return false // 'null' (a sandboxed page, a file) included
    }
    if (allowOrigins.length > 0) return allowOrigins.includes(url.origin)
    return (url.protocol === 'http:' || url.protocol === 'https:') && LOCAL_NAMES.has(url.hostname)
  }
}

/** 3. The token: the index of the one the request carries, or -1. Every token is compared, in constant time. */
export function tokenCheck(tokens) {
  const digests = tokens.map(sha256)
  return (req) => {
    const match = /^Bearer +([^\s]+) *$/i.exec(req.headers.authorization ?? '')
    if (!match) return -1
    const digest = sha256(match[1])
    let found = -1
    digests.forEach((d, i) => {
      if (timingSafeEqual(d, digest) && found < 0) found = i
    })
    return found
  }
}
