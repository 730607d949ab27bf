/** The `mcp` option: what the close ends once the calls in flight are over (read when called). */
import type { Closable, HttpKeepaliveOptions } from './keepalive'

/** Every Closable in what `mcp` names (read when called). */
export function closablesOf(mcp: HttpKeepaliveOptions['mcp']): Closable[] {
  const value = typeof mcp === 'function' ? mcp() : mcp
  if (value === undefined || value === null) return []
  if (typeof (value as Closable).close === 'function') return [value as Closable]
  if (typeof (value as Iterable<Closable>)[Symbol.iterator] === 'function') {
    // A Map's entries (or any map-like store's: an LRU cache, a Map from another realm) are
    // [key, value] pairs: take the values.
    const mapLike = typeof (value as ReadonlyMap<unknown, Closable>).values === 'function' && typeof (value as ReadonlyMap<unknown, Closable>).get === 'function'
    const items = mapLike ? [...(value as ReadonlyMap<unknown, Closable>).values()] : [...(value as Iterable<Closable>)]
    return items.filter((item): item is Closable => typeof item?.close === 'function')
  }
  return Object.values(value as Record<string, Closable>).filter((item) => typeof item?.close === 'function')
}

/** The report's `sessions`: how many closables a collection holds (0 for a single handler). */
export function sizeOf(mcp: HttpKeepaliveOptions['mcp']): number {
  if (mcp === undefined || typeof (mcp as Closable).close === 'function') return 0
  try {
    return closablesOf(mcp).length
  } catch {
    return 0
  }
}
