/** One section of `reapkit doctor`'s words: a heading, a line per item, a blank line; nothing when there are no items. */
export function section<T>(heading: string, items: readonly T[], line: (item: T) => string): string {
  if (items.length === 0) return ''
  return `${heading}\n${items.map(line).join('')}\n`
}
