/** What the steps of one server's drain share: its keepalive, settings, exchanges and counters. */
import type { Server } from 'node:http'
import type { Keepalive } from '../../index'
import type { Connections } from './connections'
import type { Exchanges } from './exchanges'
import type { HttpSettings } from './options'

export interface HttpDrain {
  readonly server: Server
  readonly keepalive: Keepalive
  readonly settings: HttpSettings
  readonly exchanges: Exchanges
  readonly connections: Connections
  /** The probe server when `probePort` was given, else null. */
  probeServer: Server | null
  /** The listening socket was told to stop accepting. */
  listenerClosed: boolean
  /** Requests refused by this server (503) while draining. */
  refused: number
  /** The report's fields (see HttpKeepalive's report). */
  readonly counts: { sessionsAtTrigger: number; streamsEnded: number; connectionsClosed: number }
}

export const draining = (drain: HttpDrain): boolean => drain.keepalive.state !== 'running'

/** The reason the drain began, for the error responses. */
export const reasonOf = (drain: HttpDrain): string => drain.keepalive.stats.reason ?? 'shutdown'
