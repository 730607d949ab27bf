// `npm run test:sanitize` (scripts/sanitize/run.sh): the tests that drive the addon and the C helpers
// hardest, run against the ASan + UBSan build. Everything else in the suite runs the same native
// code through these paths; this set keeps the run within a few minutes on two cores.
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: [
      'test/teardown.test.ts', // exits in flight at process exit and worker termination
      'test/robustness.test.ts', // worker churn, hostile input, out of descriptors
      'test/exit-watch.test.ts',
      'test/parent.test.ts',
      'test/reaping.test.ts',
      'test/supervision.test.ts',
      'test/cli.test.ts', // the reapkit command on the sanitized supervisor (REAPKIT_SUPERVISOR)
      'test/cli-signals.test.ts',
      'test/cli-cgroup.test.ts', // the wrapper's cgroup (native/supervise/cgroup.c, cgroup_where.c): members, cgroup.kill, populated 0
      'test/cli-cgroup-stop.test.ts', // its edges: nested cgroups, a small open-file limit, the freeze, children moved out
      'test/cli-containers.test.ts', // the wrapper's engine calls (native/supervise/engine.c), where an engine runs
      'test/wrapper-containers-stopping.test.ts', // the wrapper's looks at a container (native/supervise/looks.c): stopping, created
      'test/container-grammar.test.ts', // native/supervise/run_grammar.c on thousands of argvs (its driver built with the sanitizers)
      'test/wrapper-machine-id.test.ts', // native/supervise/owner.c's machine-id reads
      'test/keepalive-stdin.test.ts', // native/stdin_watch.cc: its thread, hang-ups at teardown
      'test/spawn-startup.test.ts', // native/exec_report.cc and the exec helper's report
      'test/prototype-pollution.test.ts',
      'test/terminal-foreground.test.ts', // native/terminal.cc and the helper's hand-over (GROUP 2)
      'test/exec-search.test.ts', // the exec helper's PATH search (native/exec_search.c), run directly
      'test/cgroup-spawn.test.ts', // the exec helper's cgroup join (--cgroup) and its failure report
      'test/cgroup-stop.test.ts', // escapees in the child's cgroup, through the sanitized helper
      'test/control-socket.test.ts', // native/peer_cred.cc on every connection, and its errors
      'test/pid-namespace.test.ts', // the exec helper's PID namespace (--pid-namespace): its init, forwarding, status
      'test/pid-namespace-stops.test.ts', // the init's job-control stops and the helper's and init's fd hygiene
    ],
    setupFiles: ['test/setup.ts'],
    // The sanitized build runs several times slower: bounds are wider still than the main suite's.
    testTimeout: 180_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
})
