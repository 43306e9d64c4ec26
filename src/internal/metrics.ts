/**
 * The metrics of calls and token requests: those shared by the transport and the token provider, and the transport's.
 *
 * @internal
 */
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
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

const requests = Metric.counter("effect_fin_requests_total", {
  description: "Calls made through effect-fin, by operation, outcome and the status of the last answer",
  incremental: true
})
const latency = Metric.histogram(
  "effect_fin_request_duration_ms",
  durationBoundaries,
  "Duration of whole calls (retries included) in milliseconds, by operation and outcome"
)

// `metric` tagged with an operation and an outcome, each pair made once, not on every call: `Metric.tagged` builds and
// hashes a new key each time. Both labels of a request count or duration go on in one step: a metric tagged twice
// merges its label lists into a new array on every update, which misses Effect's per-label-list cache and builds and
// hashes the key again.
const byOutcome = <Type, In, Out>(metric: Metric.Metric<Type, In, Out>) =>
  memo((name) =>
    memo((outcome) =>
      Metric.taggedWithLabels(metric, [MetricLabel.make("operation", name), MetricLabel.make("outcome", outcome)])
    )
  )
// By the status of the call's last answer too (`none`: there was none), so that a dashboard tells a 4xx (a request
// the service refused) from a 5xx (the service failing), both `ApiError`. A bounded set, the service's statuses.
const requestsOf = memo((name) =>
  memo((outcome) =>
    memo((status) =>
      Metric.taggedWithLabels(requests, [
        MetricLabel.make("operation", name),
        MetricLabel.make("outcome", outcome),
        MetricLabel.make("status", status)
      ])
    )
  )
)
/**
 * `effect_fin_requests_total` tagged with a call's operation, outcome and the status of its last answer (`none`: there
 * was none), each set made once.
 */
export const requestsBy = (name: string, outcome: string, status: number | undefined) =>
  requestsOf(name)(outcome)(status === undefined ? "none" : String(status))
/**
 * `effect_fin_request_duration_ms` by operation, then outcome: the durations of calls cut at their deadline, or refused
 * at once, are not those of answered ones.
 */
export const latencyByOutcome = byOutcome(latency)
