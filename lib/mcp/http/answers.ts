/**
 * The answers the drain writes itself: the probes' 200/503, a refused request's 503 with -32099,
 * and the last words of a response it takes from the SDK (an abandoned call's error, a stream's end).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { sentAsSse, shuttingDownResponse, takeOver } from './wire'
import { draining, type HttpDrain, reasonOf } from './context'
import type { Exchange } from './exchanges'

const pathOf = (req: IncomingMessage): string => {
  const url = req.url ?? '/'
  const q = url.indexOf('?')
  return q < 0 ? url : url.slice(0, q)
}

/** Answers a GET or HEAD of the readiness or liveness path; false for anything else. */
export function probeAnswer(drain: HttpDrain, req: IncomingMessage, res: ServerResponse): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false
  const { readinessPath, livenessPath } = drain.settings
  if (readinessPath === undefined && livenessPath === undefined) return false
  const path = pathOf(req)
  let ok: boolean
  if (path === readinessPath) ok = !draining(drain)
  else if (path === livenessPath) ok = true
  else return false
  const body = JSON.stringify({ status: ok ? 'ok' : 'draining', state: drain.keepalive.state })
  res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) })
  res.end(req.method === 'HEAD' ? undefined : body)
  return true
}

/** How a 503 is written: the response's own methods, or those kept by takeOver(). */
type Writer = { writeHead: ServerResponse['writeHead']; end: (body: string) => void }

/** A 503 with -32099 for `id`, and the connection closed after it. */
function answer503(drain: HttpDrain, res: ServerResponse, id: string | number | null, abandoned: boolean, own?: Writer): void {
  own ??= { writeHead: res.writeHead.bind(res), end: (b) => void res.end(b) }
  const body = JSON.stringify(shuttingDownResponse(id, reasonOf(drain), abandoned))
  own.writeHead(503, {
    'content-type': 'application/json',
    'retry-after': String(drain.settings.retryAfter),
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  })
  own.end(body)
}

/** A new request while draining: 503, Retry-After, -32099 with its id; counted as refused. */
export function refuse(drain: HttpDrain, req: IncomingMessage, res: ServerResponse, id: string | number | null): void {
  try {
    drain.keepalive.begin()() // counted by the keepalive as refused (it throws while shutting down)
  } catch {
    // the ShuttingDownError this counting is for
  }
  drain.refused++
  req.resume() // the body nobody will read
  if (!res.headersSent && !res.destroyed) answer503(drain, res, id, false)
}

/** Takes the response from the SDK and ends it with the last words given (or none). */
export function endHere(drain: HttpDrain, ex: Exchange, abandoned: boolean): void {
  const { res } = ex
  if (res.destroyed || res.writableEnded) return
  ex.endedHere = true
  const own = takeOver(res)
  const id = ex.body?.kind()?.id ?? null
  if (!res.headersSent) {
    const end = (b: string): void => {
      own.write(b)
      own.end()
    }
    answer503(drain, res, id, abandoned, { writeHead: own.writeHead, end })
  } else if (sentAsSse(res)) {
    if (abandoned) own.write(`event: message\ndata: ${JSON.stringify(shuttingDownResponse(id, reasonOf(drain), true))}\n\n`)
    own.end()
  } else {
    res.destroy() // a JSON body half written cannot be completed
  }
}
