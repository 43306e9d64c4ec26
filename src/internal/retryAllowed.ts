/**
 * A call's retry asked of its operation's retry budget (`retryBudget`): the verdict noted for the call, a refusal
 * counted and told once per episode of them.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Durations from "./duration.js"
import { memo } from "./memo.js"
import * as Monotonic from "./monotonic.js"
import type * as RetryBudget from "./retryBudget.js"

const refusedRetries = Metric.counter("effect_fin_retries_refused_total", {
  description: "Retries that the client's retry budget refused, by operation",
  incremental: true
})
// Made once per operation, not on every call (see `byOutcome` in ./metrics.ts).
const refusedRetriesOf = memo((name) => Metric.tagged(refusedRetries, "operation", name))

/** The end of an episode of refusals, told once a whole window has passed with none. */
export const episodeOver = (name: string, episode: RetryBudget.Episode) =>
  Effect.logInfo(
    `effect-fin: the retry budget of ${name} has refused no retry for 10 s; failed calls are retried again (it ` +
      `refused ${episode.refused} ${episode.refused === 1 ? "retry" : "retries"} over ${
        Durations.formatMillis(Duration.millis(episode.millis))
      })`
  )

/**
 * What became of a call's retries under its operation's budget: when the last one allowed was counted (given back if
 * the call ends before sending it), and whether one was refused (said on the span and in the error).
 */
export interface BudgetState {
  countedAt: number | undefined
  refused: boolean
}

/**
 * Whether `budget` allows a retry of `operation` now, noted in `state`. A refusal is counted in the metric, and told
 * once per episode of them (a warning; the episode's end at Info, the rest at Debug).
 */
export const retryAllowed = (
  budget: RetryBudget.RetryBudget,
  name: string,
  operation: string,
  state: BudgetState
): Effect.Effect<boolean> =>
  Effect.flatMap(Monotonic.millis, (now) => {
    const verdict = budget.take(now)
    if (verdict !== "refused" && verdict !== "spent") {
      state.countedAt = now
      return verdict === "allowed" ? Effect.succeed(true) : Effect.as(episodeOver(name, verdict), true)
    }
    state.refused = true
    const { calls, retries } = budget.counts(now)
    const line = `effect-fin: not retrying ${operation}: the retry budget of ${name} is spent (${retries} retries ` +
      `for ${calls} calls in the last 10 s; retryBudget ${budget.percent}% of calls plus 10 a second)`
    return Effect.zipRight(
      Metric.increment(refusedRetriesOf(name)),
      Effect.as(
        (verdict === "spent"
          ? Effect.logWarning(`${line}; failed calls end with their error until it has room again`)
          : Effect.logDebug(line)).pipe(Effect.annotateLogs({ operation, retries, calls })),
        false
      )
    )
  })
