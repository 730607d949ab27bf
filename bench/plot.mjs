// Hand-written SVG plots for the bench report: no dependencies, no fonts to embed, plain <path>s.
//   ecdf(...)  latency distributions as empirical CDFs on a log time axis, one panel or several
//   lines(...) y against x (e.g. shutdown wall time against the number of children), log x axis
// Each returns an SVG document as a string.

const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#8C564B'] // Okabe-Ito + 1
const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"'

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
const r2 = (v) => Math.round(v * 100) / 100

/** Short number for tick labels and legends: 0.25, 3.1, 42, 1200. */
export function short(v) {
  if (!Number.isFinite(v)) return String(v)
  const a = Math.abs(v)
  if (a === 0) return '0'
  if (a >= 100) return v.toFixed(0)
  if (a >= 10) return v.toFixed(1).replace(/\.0$/, '')
  if (a >= 1) return v.toFixed(2).replace(/\.?0+$/, '')
  return Number(v.toPrecision(2)).toString()
}

function quantile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]
}

/** Log axis covering [lo, hi] in whole decades, with major (decade) and minor (2..9) ticks. */
function logAxis(lo, hi) {
  const a = Math.floor(Math.log10(lo))
  let b = Math.ceil(Math.log10(hi))
  if (b === a) b = a + 1
  const major = []
  const minor = []
  for (let e = a; e <= b; e++) {
    major.push(10 ** e)
    if (e < b) for (let m = 2; m <= 9; m++) minor.push(m * 10 ** e)
  }
  return { min: 10 ** a, max: 10 ** b, major, minor, map: (v, x0, x1) => x0 + ((Math.log10(v) - a) / (b - a)) * (x1 - x0) }
}

/** Linear axis from 0 (or below) to a round number above hi, with 1-2-5 steps. */
function linAxis(lo, hi, count = 5) {
  lo = Math.min(0, lo)
  const span = hi - lo || 1
  const raw = span / count
  const mag = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw)
  const min = Math.floor(lo / step) * step
  const max = Math.ceil(hi / step) * step
  const major = []
  for (let v = min; v <= max + step / 2; v += step) major.push(Number(v.toPrecision(12)))
  return { min, max, major, minor: [], map: (v, y0, y1) => y0 + ((v - min) / (max - min || 1)) * (y1 - y0) }
}

const tickLabel = (v, unit) => (unit === 'ms' && v >= 1000 ? `${short(v / 1000)} s` : short(v))

function legendBlock(items, x, y, width) {
  // One entry per line: swatch + label. Returns [svg, height].
  const lineH = 17
  const out = []
  items.forEach((it, i) => {
    const yy = y + i * lineH
    const dash = it.dash ? ` stroke-dasharray="${it.dash}"` : ''
    out.push(`<line x1="${x}" y1="${yy - 4}" x2="${x + 22}" y2="${yy - 4}" stroke="${it.color}" stroke-width="2.5"${dash}/>`)
    if (it.marker) out.push(`<circle cx="${x + 11}" cy="${yy - 4}" r="3" fill="${it.color}"/>`)
    out.push(`<text x="${x + 30}" y="${yy}" font-size="12" fill="#222">${esc(it.label)}</text>`)
  })
  void width
  return [out.join('\n'), items.length * lineH]
}

function frame({ width, height, title, subtitle }) {
  const head = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${FONT}>`,
    `<title>${esc(title)}</title>`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="16" y="24" font-size="15" font-weight="600" fill="#111">${esc(title)}</text>`,
  ]
  if (subtitle) head.push(`<text x="16" y="42" font-size="11.5" fill="#555">${esc(subtitle)}</text>`)
  return head.join('\n')
}

/** Axes box, grid, ticks and labels for one panel. */
function axes({ x0, y0, x1, y1, xa, ya, xLabel, yLabel, xUnit, yUnit, yFmt, panelTitle }) {
  const out = []
  if (panelTitle) out.push(`<text x="${x0}" y="${y0 - 8}" font-size="12.5" font-weight="600" fill="#333">${esc(panelTitle)}</text>`)
  const labelMinor = xa.major.length <= 3 // two decades or fewer: label the 2s and 5s too
  for (const v of xa.minor) {
    const x = r2(xa.map(v, x0, x1))
    out.push(`<line x1="${x}" y1="${y0}" x2="${x}" y2="${y1}" stroke="#f0f0f0"/>`)
    out.push(`<line x1="${x}" y1="${y1}" x2="${x}" y2="${y1 + 3}" stroke="#888"/>`)
    const m = Math.round(v / 10 ** Math.floor(Math.log10(v) + 1e-9))
    if (labelMinor && (m === 2 || m === 5)) out.push(`<text x="${x}" y="${y1 + 16}" font-size="9.5" fill="#777" text-anchor="middle">${esc(tickLabel(v, xUnit))}</text>`)
  }
  for (const v of xa.major) {
    const x = r2(xa.map(v, x0, x1))
    out.push(`<line x1="${x}" y1="${y0}" x2="${x}" y2="${y1}" stroke="#dddddd"/>`)
    out.push(`<line x1="${x}" y1="${y1}" x2="${x}" y2="${y1 + 6}" stroke="#444"/>`)
    out.push(`<text x="${x}" y="${y1 + 19}" font-size="11" fill="#333" text-anchor="middle">${esc(tickLabel(v, xUnit))}</text>`)
  }
  for (const v of ya.major) {
    const y = r2(ya.map(v, y1, y0))
    out.push(`<line x1="${x0}" y1="${y}" x2="${x1}" y2="${y}" stroke="#dddddd"/>`)
    out.push(`<line x1="${x0 - 6}" y1="${y}" x2="${x0}" y2="${y}" stroke="#444"/>`)
    out.push(`<text x="${x0 - 9}" y="${y + 4}" font-size="11" fill="#333" text-anchor="end">${esc(yFmt ? yFmt(v) : tickLabel(v, yUnit))}</text>`)
  }
  out.push(`<rect x="${x0}" y="${y0}" width="${x1 - x0}" height="${y1 - y0}" fill="none" stroke="#444"/>`)
  out.push(`<text x="${(x0 + x1) / 2}" y="${y1 + 38}" font-size="12" fill="#222" text-anchor="middle">${esc(xLabel)}</text>`)
  const ym = (y0 + y1) / 2
  out.push(`<text x="${x0 - 46}" y="${ym}" font-size="12" fill="#222" text-anchor="middle" transform="rotate(-90 ${x0 - 46} ${ym})">${esc(yLabel)}</text>`)
  return out.join('\n')
}

/**
 * Empirical CDFs on a log time axis.
 *   panels: [{ title?, series: [{ name, values: number[] (ms), dash? }] }]
 * Every panel shares one x range so panels compare at a glance. The legend under each panel gives
 * n, p50 and p99 for each series. Values <= 0 are clamped to the axis minimum.
 */
export function ecdf({ title, subtitle, panels, xLabel = 'time, ms (log scale)', width = 820 }) {
  const all = panels.flatMap((p) => p.series.flatMap((s) => s.values)).filter((v) => Number.isFinite(v) && v > 0)
  const xa = logAxis(Math.min(...all), Math.max(...all))
  const ya = { major: [0, 0.25, 0.5, 0.75, 1], minor: [], map: (v, y0, y1) => y0 + v * (y1 - y0) }
  const left = 76
  const right = width - 24
  const plotH = 230
  let y = subtitle ? 74 : 58
  const body = []
  for (const panel of panels) {
    const y0 = y
    const y1 = y + plotH
    body.push(axes({ x0: left, y0, x1: right, y1, xa, ya, xLabel, yLabel: 'fraction of runs ≤ x', xUnit: 'ms', yFmt: (v) => `${v * 100}%`, panelTitle: panel.title }))
    const legend = []
    panel.series.forEach((s, i) => {
      const color = s.color ?? PALETTE[i % PALETTE.length]
      const vals = s.values.filter(Number.isFinite).map((v) => Math.max(v, xa.min)).sort((a, b) => a - b)
      if (vals.length === 0) return
      const X = (v) => r2(xa.map(v, left, right))
      const Y = (f) => r2(ya.map(f, y1, y0))
      let d = `M${X(vals[0])},${Y(0)}`
      vals.forEach((v, k) => {
        d += ` H${X(v)} V${Y((k + 1) / vals.length)}`
      })
      d += ` H${right}`
      const dash = s.dash ? ` stroke-dasharray="${s.dash}"` : ''
      body.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="2"${dash} stroke-linejoin="round"><title>${esc(s.name)}</title></path>`)
      // p50 marker on the curve
      body.push(`<circle cx="${X(quantile(vals, 0.5))}" cy="${Y(0.5)}" r="3.2" fill="${color}"/>`)
      legend.push({ color, dash: s.dash, marker: true, label: `${s.name}: n=${vals.length}, p50 ${short(quantile(vals, 0.5))} ms, p99 ${short(quantile(vals, 0.99))} ms` })
    })
    const [lg, lh] = legendBlock(legend, left, y1 + 62, right - left)
    body.push(lg)
    y = y1 + 62 + lh + 26
  }
  const height = y - 6
  return `${frame({ width, height, title, subtitle })}\n${body.join('\n')}\n</svg>\n`
}

/**
 * Lines with markers: y (ms, linear from 0) against x (log scale).
 *   series: [{ name, points: [[x, y], ...], dash? }]; refs: [{ name, y }] horizontal dashed lines.
 */
export function lines({ title, subtitle, series, refs = [], xLabel, yLabel, width = 820 }) {
  const xs = series.flatMap((s) => s.points.map((p) => p[0]))
  const ys = [...series.flatMap((s) => s.points.map((p) => p[1])), ...refs.map((r) => r.y)]
  const xa = logAxis(Math.min(...xs), Math.max(...xs))
  const ya = linAxis(0, Math.max(...ys) * 1.08)
  const left = 76
  const right = width - 24
  const y0 = subtitle ? 74 : 58
  const y1 = y0 + 260
  const X = (v) => r2(xa.map(v, left, right))
  const Y = (v) => r2(ya.map(v, y1, y0))
  const body = [axes({ x0: left, y0, x1: right, y1, xa, ya, xLabel, yLabel, xUnit: '', yUnit: 'ms' })]
  const legend = []
  refs.forEach((r, i) => {
    const color = r.color ?? '#888888'
    body.push(`<line x1="${left}" y1="${Y(r.y)}" x2="${right}" y2="${Y(r.y)}" stroke="${color}" stroke-width="1.5" stroke-dasharray="6 4"/>`)
    legend.push({ color, dash: '6 4', label: r.name })
    void i
  })
  series.forEach((s, i) => {
    const color = s.color ?? PALETTE[i % PALETTE.length]
    const pts = [...s.points].sort((a, b) => a[0] - b[0])
    const d = pts.map(([x, y], k) => `${k ? 'L' : 'M'}${X(x)},${Y(y)}`).join(' ')
    const dash = s.dash ? ` stroke-dasharray="${s.dash}"` : ''
    body.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="2"${dash}/>`)
    for (const [x, y] of pts) {
      body.push(`<circle cx="${X(x)}" cy="${Y(y)}" r="3.8" fill="${color}"><title>${esc(`${s.name}: ${x} → ${short(y)} ms`)}</title></circle>`)
      body.push(`<text x="${X(x)}" y="${Y(y) - 8}" font-size="10.5" fill="${color}" text-anchor="middle">${esc(short(y))}</text>`)
    }
    legend.push({ color, marker: true, dash: s.dash, label: s.name })
  })
  const [lg, lh] = legendBlock(legend, left, y1 + 62, right - left)
  body.push(lg)
  const height = y1 + 62 + lh + 14
  return `${frame({ width, height, title, subtitle })}\n${body.join('\n')}\n</svg>\n`
}
