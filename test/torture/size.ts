// The torture suite's size: the defaults are CI's bounded run; raise them for long local runs, e.g.
//   TORTURE_SCALE=20 npm run test:torture        (everything 20 times larger)
//   TORTURE_SEED=1234 npm run test:torture       (replay the run a failure printed)
const scale = Math.max(0.1, Number(process.env.TORTURE_SCALE ?? 1) || 1)

/** A count scaled by TORTURE_SCALE (never below 1). */
export const sized = (n: number): number => Math.max(1, Math.round(n * scale))

/** The run's seed: TORTURE_SEED, or a fresh one (printed with every failure). */
export const SEED = Number(process.env.TORTURE_SEED ?? Math.floor(Math.random() * 2 ** 31))
