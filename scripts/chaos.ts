/**
 * `npm run chaos`: the full chaos run (10,000 fee calculations and 2,000 subdivision lookups, concurrency 64, faults
 * on 30% of requests, tokens revoked and expired throughout) with a summary table. Exit 1 if any check fails.
 * `CHAOS_SCALE` scales the number of calls; `CHAOS_RETRY_BUDGET` (a percentage, or `unlimited`) sets the client's
 * `retryBudget` (default 20, the client's own default).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Chaos from "./lib/chaos.js"

const size = Number(process.env.CHAOS_SCALE ?? "1")
const budget = process.env.CHAOS_RETRY_BUDGET
if (budget !== undefined && !/^(\d+|unlimited)$/i.test(budget)) {
  throw new Error(
    `CHAOS_RETRY_BUDGET must be a whole number (a percentage) or unlimited, not ${JSON.stringify(budget)}`
  )
}
const options: Chaos.ChaosOptions = {
  ...Chaos.fullRun,
  ...(budget === undefined ? {} : { retryBudget: /^\d+$/.test(budget) ? Number(budget) : "unlimited" }),
  fees: Math.round(Chaos.fullRun.fees * size),
  subdivisions: Math.round(Chaos.fullRun.subdivisions * size)
}

NodeRuntime.runMain(
  Effect.gen(function*() {
    yield* Console.log(`chaos run: ${options.fees} fee calculations + ${options.subdivisions} subdivision lookups…`)
    const report = yield* Chaos.run(options)
    const table = Chaos.summary(report)
    yield* Console.log(table)
    if (/FAIL|GROWING/.test(table)) {
      yield* Console.error("chaos run: some checks failed")
      process.exitCode = 1
    }
  })
)
