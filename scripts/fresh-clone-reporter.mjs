// A vitest reporter for scripts/check-fresh-clone.mjs: what a run with no engine and no Wine says
// about each file, written as JSON to $REAPKIT_FRESH_CLONE_VERDICT. A file fails the check when it
// does not collect or a test fails; when it reports no test, or a block of it none (a block whose
// tests are made per engine is empty without one, and the run lists no reason); or when a skipped
// test carries no reason ("skipped: ..." in its name or its block's, or a note from ctx.skip).
import { writeFileSync } from 'node:fs'

const REASON = /skipped: \S/

export default class FreshCloneReporter {
  onTestRunEnd(testModules, unhandledErrors) {
    const problems = []
    const files = []
    for (const m of testModules) {
      const file = m.relativeModuleId ?? m.moduleId
      const say = (what) => problems.push(`${file}: ${what}`)
      for (const e of m.errors()) say(`does not collect: ${String(e.message ?? e).split('\n')[0]}`)
      const tests = [...m.children.allTests()]
      const suites = [...m.children.allSuites()]
      if (tests.length === 0 && suites.length === 0 && m.errors().length === 0) say('reports no test, so no reason for a skip')
      for (const s of suites) {
        if (s.children.allTests().next().done) say(`the block "${s.fullName}" has no test: its skip shows no reason`)
      }
      let skipped = 0
      for (const t of tests) {
        const r = t.result()
        if (r.state === 'failed') say(`fails: ${t.fullName}: ${String(r.errors?.[0]?.message ?? '').split('\n')[0]}`)
        if (r.state !== 'skipped') continue
        skipped++
        if (!REASON.test(t.fullName) && !r.note) say(`skipped with no reason: ${t.fullName}`)
      }
      files.push({ file, tests: tests.length, skipped })
    }
    for (const e of unhandledErrors) problems.push(`unhandled error: ${String(e.message ?? e).split('\n')[0]}`)
    const out = process.env.REAPKIT_FRESH_CLONE_VERDICT
    if (out) writeFileSync(out, JSON.stringify({ files, problems }, null, 2))
  }
}
