/**
 * The metrics shared by the transport and the token provider.
 *
 * @internal
 */
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import { memo } from "./memo.js"

// Counted as each retry is decided, before its wait: one whose caller gives up during the wait is counted, not sent.
const retries = Metric.counter("effect_fin_retries_total", {
  description: "Retries effect-fin decided to make (counted before the wait), by operation",
  incremental: true
})

/** `effect_fin_retries_total` tagged with `operation`, made once per operation (`Metric.tagged` hashes a new key). */
export const retriesOf = memo((operation) => Metric.tagged(retries, "operation", operation))

/**
 * The buckets of the duration histograms, in milliseconds: 5 ms to 81.92 s (`count` includes the unbounded bucket),
 * so a call cut by the default 60 s deadline still lands in a finite bucket.
 */
export const durationBoundaries = MetricBoundaries.exponential({ start: 5, factor: 2, count: 16 })
