/**
 * The injectable logger: `{ debug, info, warn, error }`, each called as `(fields, message)` like
 * pino. One structured event per lifecycle step; quiet by default (the silent logger).
 */
export interface Logger {
  debug(fields: object, message?: string): void
  info(fields: object, message?: string): void
  warn(fields: object, message?: string): void
  error(fields: object, message?: string): void
}

const noop = (): void => {}
// Frozen: logEvent skips it by identity, so a patched method would silently never be called.
export const silentLogger: Logger = Object.freeze({ debug: noop, info: noop, warn: noop, error: noop })

/** Logs one lifecycle event; a logger that throws never breaks a stop path. */
export function logEvent(logger: Logger | undefined, level: keyof Logger, event: string, fields: object = {}): void {
  // The silent logger: no event object made (a shutdownAll of thousands logs ~10 events per child).
  if (!logger || logger === silentLogger) return
  try {
    logger[level]({ event, ...fields }, event)
  } catch {
    // a broken logger must not abort a shutdown
  }
}
