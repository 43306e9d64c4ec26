/**
 * Building blocks of a call, measured alone (no I/O): each wraps an asynchronous no-op (resumed on the next
 * `setImmediate`) run by 16 fibers, and its figure is the CPU time per call above the bare no-op. These are the costs
 * profiling pointed at in effect-fin's own code, in the form it had before and the form it has now.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricLabel from "effect/MetricLabel"
import * as TimeLimits from "../../src/internal/timeLimits.js"

/** One building block: its cost before and after, in CPU µs per call above the bare asynchronous no-op. */
export interface BlockRow {
  readonly suite: "blocks"
  readonly operation: string
  readonly before: string
  readonly after: string
  readonly beforeMicros: number
  readonly afterMicros: number
}

const asyncOp = Effect.async<number>((resume) => {
  setImmediate(() => resume(Effect.succeed(1)))
})

const cpu = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}

const perCall = async (make: () => Effect.Effect<unknown, unknown>, n: number): Promise<number> => {
  let next = 0
  const worker = Effect.whileLoop({ while: () => next++ < n, body: make, step: () => {} })
  const c0 = cpu()
  await Effect.runPromise(Effect.all(Array.from({ length: 16 }, () => worker), { concurrency: 16, discard: true }))
  return (cpu() - c0) / n
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[values.length >> 1]!

const counter = Metric.counter("effect_fin_bench_blocks_total", { incremental: true })
const histogram = Metric.histogram(
  "effect_fin_bench_blocks_ms",
  MetricBoundaries.exponential({ start: 5, factor: 2, count: 14 })
)
const taggedOnce = [
  Metric.taggedWithLabels(histogram, [MetricLabel.make("operation", "fee"), MetricLabel.make("outcome", "success")]),
  Metric.taggedWithLabels(counter, [MetricLabel.make("operation", "fee"), MetricLabel.make("outcome", "success")])
] as const
const duration = Duration.seconds(30)

const blocks: ReadonlyArray<{
  readonly operation: string
  readonly before: string
  readonly after: string
  readonly beforeRun: () => Effect.Effect<unknown, unknown>
  readonly afterRun: () => Effect.Effect<unknown, unknown>
}> = [
  {
    operation: "timeout around an attempt (live clock)",
    before: "Effect.timeoutFail (2 fibers)",
    after: "TimeLimits.timeoutFail (1 fiber + setTimeout)",
    beforeRun: () => Effect.timeoutFail(asyncOp, { duration, onTimeout: () => "timeout" }),
    afterRun: () => TimeLimits.timeoutFail(asyncOp, duration, () => "timeout")
  },
  {
    operation: "the call's span",
    before: "withSpan, stack captured",
    after: "withSpan, captureStackTrace: false",
    beforeRun: () => Effect.withSpan(asyncOp, "effect-fin.bench", { kind: "client", attributes: { a: "b" } }),
    afterRun: () =>
      Effect.withSpan(asyncOp, "effect-fin.bench", { kind: "client", captureStackTrace: false, attributes: { a: "b" } })
  },
  {
    operation: "latency + request metrics",
    before: "Metric.tagged per call",
    after: "tagged once, both labels of each in one step",
    beforeRun: () =>
      Effect.zipRight(
        asyncOp,
        Effect.all([
          Metric.update(Metric.tagged(histogram, "operation", "fee"), 12),
          Metric.increment(Metric.tagged(Metric.tagged(counter, "operation", "fee"), "outcome", "success"))
        ], { discard: true })
      ),
    afterRun: () =>
      Effect.zipRight(asyncOp, Effect.zipRight(Metric.update(taggedOnce[0], 12), Metric.increment(taggedOnce[1])))
  }
]

/** Runs every block, before and after, alternating, median of `rounds`. */
export const runBlocks = async (options: { readonly rounds?: number; readonly calls?: number } = {}) => {
  const rounds = options.rounds ?? 7
  const calls = options.calls ?? 8000
  for (const b of blocks) {
    await perCall(b.beforeRun, 2000)
    await perCall(b.afterRun, 2000)
  }
  await perCall(() => asyncOp, 2000)
  const rows: Array<BlockRow> = []
  for (const b of blocks) {
    const before: Array<number> = []
    const after: Array<number> = []
    for (let r = 0; r < rounds; r++) {
      const base = await perCall(() => asyncOp, calls)
      before.push((await perCall(b.beforeRun, calls)) - base)
      after.push((await perCall(b.afterRun, calls)) - base)
    }
    rows.push({
      suite: "blocks",
      operation: b.operation,
      before: b.before,
      after: b.after,
      beforeMicros: median(before),
      afterMicros: median(after)
    })
  }
  return rows
}
