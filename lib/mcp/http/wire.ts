/**
 * The wire-level pieces of withHttpKeepalive (lib/mcp/http/keepalive.ts): telling an SSE stream, ending a
 * response that the SDK still owns without letting its later writes reach the socket, and the
 * -32099 error response (lib/mcp/index.ts answers with it too). The body tee is in lib/mcp/http/body-tee.ts.
 */
import type { ServerResponse } from 'node:http'
import { SHUTTING_DOWN_JSONRPC_CODE } from '../../index'

export const isSse = (value: unknown): boolean => typeof value === 'string' && value.toLowerCase().includes('text/event-stream')

/** Whether the headers already sent said text/event-stream (writeHead(status, headers) leaves getHeader() empty). */
export function sentAsSse(res: ServerResponse): boolean {
  if (isSse(res.getHeader('content-type'))) return true
  const head = (res as { _header?: string })._header
  return typeof head === 'string' && /\r\ncontent-type:\s*text\/event-stream/i.test(head)
}

/** The methods through which the owner of a response writes to it. */
const WRITERS = ['writeHead', 'setHeader', 'removeHeader', 'appendHeader', 'flushHeaders', 'writeContinue', 'writeEarlyHints', 'addTrailers', 'write', 'end'] as const

/**
 * Takes a response from whoever owns it (the SDK): from now on what they write is dropped, not an
 * error (a write after end() is an 'error' event nobody listens to; a writeHead() after ours
 * throws). Returns the response's own end() and write() for the last words.
 */
export function takeOver(res: ServerResponse): { write: (chunk: string) => void; end: () => void; writeHead: ServerResponse['writeHead'] } {
  const own = {
    write: res.write.bind(res) as (chunk: string) => boolean,
    end: res.end.bind(res) as () => ServerResponse,
    writeHead: res.writeHead.bind(res),
  }
  for (const name of WRITERS) {
    if (typeof (res as unknown as Record<string, unknown>)[name] !== 'function') continue
    Object.defineProperty(res, name, {
      configurable: true,
      writable: true,
      value: (...args: unknown[]) => {
        const cb = args.find((a) => typeof a === 'function') as (() => void) | undefined
        if (cb) queueMicrotask(cb)
        return name === 'write' ? true : res
      },
    })
  }
  return { write: (chunk) => void own.write(chunk), end: () => void own.end(), writeHead: own.writeHead }
}

/** The JSON-RPC error response (-32099) to request `id` of a server that is shutting down: refused, or abandoned at the drain's end. */
export function shuttingDownResponse(id: string | number | null, reason: string, abandoned = false) {
  return {
    jsonrpc: '2.0' as const,
    id,
    error: {
      code: SHUTTING_DOWN_JSONRPC_CODE,
      message: abandoned
        ? `Server is shutting down (${reason}): the request was abandoned at the end of the drain`
        : `Server is shutting down (${reason})`,
      data: abandoned ? { reason, abandoned: true } : { reason },
    },
  }
}
