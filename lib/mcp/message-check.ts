/**
 * Which parsed lines from a stdio server reach onmessage: the SDK's own JSON-RPC message schema when
 * the host has the SDK installed, else a check of ours that says yes and no to the same messages.
 *
 * The SDK's schema (JSONRPCMessageSchema, zod, the same in 1.x and 2.x) is loaded on the first
 * message, never at require time: `require('reapkit/mcp')` must not pay for loading zod when no
 * message ever arrives, and with an SDK Client in use the schema is already in Node's cache. The
 * SDK is an optional peer: reapkit/mcp works without it, with checkMessageOwn below.
 */

/** What a line's JSON comes to: the message for onmessage, or the error for onerror. */
export type MessageOutcome = { message: unknown; error?: undefined } | { message?: undefined; error: Error }

type Parse = (value: unknown) => unknown

/** Per SDK line, the loaded parser (null: no SDK resolvable from here; undefined: not tried yet). */
const loaded: { 1?: Parse | null; 2?: Parse | null } = {}

/**
 * The SDK's parser of a JSON-RPC message: the line the Client speaks first, then the other line.
 * Loaded from the host's own install at run time, never bundled into this entry (a name in a
 * variable: the bundler leaves the require as it is).
 */
function sdkParser(line: 1 | 2): Parse | null {
  for (const n of line === 1 ? ([1, 2] as const) : ([2, 1] as const)) {
    if (loaded[n] === undefined) loaded[n] = loadParser(n)
    const parse = loaded[n]
    if (parse) return parse
  }
  return null
}

function loadParser(line: 1 | 2): Parse | null {
  try {
    if (line === 1) {
      const name = '@modelcontextprotocol/sdk/types.js'
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const types = require(name) as { JSONRPCMessageSchema?: { parse?: Parse } }
      const schema = types.JSONRPCMessageSchema
      return typeof schema?.parse === 'function' ? (value) => schema.parse!(value) : null
    }
    const name = '@modelcontextprotocol/client'
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const client = require(name) as { parseJSONRPCMessage?: Parse }
    return typeof client.parseJSONRPCMessage === 'function' ? client.parseJSONRPCMessage : null
  } catch {
    return null // not installed where this module can see it: our own check
  }
}

/**
 * The outcome for one parsed line, as the SDK of `line` decides it (its schema's error goes to
 * onerror as the SDK's transport passes it on), or as checkMessageOwn does without an SDK.
 */
export function checkMessage(value: unknown, text: string, line: 1 | 2): MessageOutcome {
  const parse = sdkParser(line)
  if (parse) {
    try {
      return { message: parse(value) }
    } catch (err) {
      return { error: err instanceof Error ? err : new Error(String(err)) }
    }
  }
  return checkMessageOwn(value) ? { message: value } : { error: new Error(`Invalid JSON-RPC message: ${text.length > 200 ? `${text.slice(0, 200)}...` : text}`) }
}

// ---- our own check: the SDK's JSONRPCMessageSchema, spelled out (types.ts in 1.x, core in 2.x) ----

type Obj = Record<string, unknown>

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
/** zod's z.number().int(): a safe integer. */
const isInt = (v: unknown): boolean => typeof v === 'number' && Number.isSafeInteger(v)
/** RequestIdSchema and ProgressTokenSchema: a string or an integer (never null). */
const isId = (v: unknown): boolean => typeof v === 'string' || isInt(v)
/** A strict object: no member but these (the SDK's `.strict()`; JSON gives no undefined members). */
const only = (m: Obj, keys: readonly string[]): boolean => Object.keys(m).every((k) => keys.includes(k))

const RELATED_TASK = 'io.modelcontextprotocol/related-task'

/** RequestMetaSchema: loose, with a typed progress token and related task when present. */
function isRequestMeta(meta: unknown): boolean {
  if (!isObject(meta)) return false
  if ('progressToken' in meta && !isId(meta.progressToken)) return false
  if (RELATED_TASK in meta) {
    const task = meta[RELATED_TASK]
    if (!isObject(task) || typeof task.taskId !== 'string') return false
  }
  return true
}

/** A request's or notification's params: absent, or a (loose) object whose `_meta` is a RequestMeta. */
const isParams = (m: Obj): boolean => !('params' in m) || (isObject(m.params) && (!('_meta' in m.params) || isRequestMeta(m.params._meta)))

/**
 * JSONRPCMessageSchema: a request, a notification, a result response or an error response, each a
 * strict object (no other top-level member); ids are strings or integers, `params` and `result`
 * objects, an error response's id optional. A result's `_meta` need only be an object (1.x checks
 * its progress token, 2.x its serverInfo with a fallback; neither turns a message away for what
 * the other accepts in practice).
 */
export function checkMessageOwn(value: unknown): boolean {
  if (!isObject(value) || value.jsonrpc !== '2.0') return false
  if ('method' in value) {
    if (typeof value.method !== 'string' || !isParams(value)) return false
    return 'id' in value ? isId(value.id) && only(value, ['jsonrpc', 'id', 'method', 'params']) : only(value, ['jsonrpc', 'method', 'params'])
  }
  if ('result' in value) {
    const result = value.result
    return isId(value.id) && isObject(result) && (!('_meta' in result) || isObject(result._meta)) && only(value, ['jsonrpc', 'id', 'result'])
  }
  if ('error' in value) {
    const error = value.error
    return (!('id' in value) || isId(value.id)) && isObject(error) && isInt(error.code) && typeof error.message === 'string' && only(value, ['jsonrpc', 'id', 'error'])
  }
  return false
}
