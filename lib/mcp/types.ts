/**
 * The MCP shapes reapkit/mcp relies on (the SDK's transport, message and server, 1.x and 2.x alike),
 * below every module of lib/mcp/ so that none of them imports the entry that imports it.
 */
/**
 * The part of the SDK's Transport interface this module relies on (1.x and 2.x alike). Its optional
 * members, and JsonRpcMessage's, take `undefined` too: the SDK declares its own so, and a project
 * with exactOptionalPropertyTypes would otherwise refuse the SDK's servers and transports here.
 */
export interface McpTransport {
  start(): Promise<void>
  send(message: JsonRpcMessage, options?: unknown): Promise<void>
  close(): Promise<void>
  onclose?: (() => void) | undefined
  onerror?: ((error: Error) => void) | undefined
  // Its parameter is compared both ways (a method's), so that the SDKs' transports, whose onmessage
  // takes their own, narrower message type, are McpTransports too; a method signature would do
  // that, but cannot take `undefined`, which the SDKs' Transport declares.
  onmessage?: BivariantHandler<[message: JsonRpcMessage, extra?: unknown]> | undefined
  sessionId?: string | undefined
  setProtocolVersion?: ((version: string) => void) | undefined
  /** 2.x */
  setSupportedProtocolVersions?: ((versions: string[]) => void) | undefined
  /** 2.x, which declares it without `undefined`: so here, or 2.x servers would not take an McpTransport. */
  readonly hasPerRequestStream?: boolean
}

/** A handler type whose parameters are compared both ways, as a method's are. */
type BivariantHandler<A extends unknown[]> = { bivariant(...args: A): void }['bivariant']

export type JsonRpcMessage = {
  jsonrpc: '2.0'
  id?: string | number | undefined
  method?: string | undefined
  params?: (Record<string, unknown> & { requestId?: string | number | undefined }) | undefined
  result?: unknown
  error?: unknown
}

/** An SDK server: McpServer (which has `.server`) or the low-level Server. */
export interface McpServerLike {
  connect(transport: McpTransport): Promise<void>
  close(): Promise<void>
  server?: McpServerLike | undefined
}
