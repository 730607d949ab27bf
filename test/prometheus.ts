import { createRequire } from 'node:module'

/** A metric family as parse-prometheus-text-format gives it. */
export type Family = {
  name: string
  type: string
  metrics: Array<{ value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string; sum?: string }>
}

/**
 * Parses Prometheus text with a real parser (parse-prometheus-text-format): `family(name)` and
 * `value(name, labels)` look names up under `prefix` (the first sample whose labels include `labels`).
 */
export function scrape(text: string, prefix: string) {
  const parse = createRequire(__filename)('parse-prometheus-text-format') as (text: string) => Family[]
  const families = new Map(parse(text).map((f) => [f.name, f]))
  const family = (name: string): Family | undefined => families.get(prefix + name)
  const value = (name: string, labels: Record<string, string> = {}): number =>
    Number(family(name)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value)
  return { families, family, value }
}
