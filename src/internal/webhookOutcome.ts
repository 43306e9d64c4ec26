/**
 * The outcomes of webhook deliveries: the answer a delivery settles as (recorded on its span) and the response that
 * says it, the counter of answered deliveries by outcome (and reason, for one rejected), and the span of a delivery
 * answered 500, which ends as failed.
 *
 * @internal
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import type * as Tracer from "effect/Tracer"
import { memo } from "./memo.js"
import * as Spans from "./spans.js"

type Outcome =
  | "handled"
  | "duplicate"
  | "stale"
  | "in_progress"
  | "reference_busy"
  | "rejected"
  | "failed"
  | "store_unavailable"
  | "shutting_down"

/**
 * How a delivery is answered: its status, and its outcome (the response's body `{"outcome": ...}`, and the span's
 * `fin.webhook.outcome`), which `respond` makes the response of.
 */
export interface Answer {
  readonly status: number
  readonly outcome: Outcome
}

// A delivery answered 500 (its handler failed, the store is unavailable, no secret) ends its effect-fin span as
// failed, as a failed call's does: an operator's tracing shows it as an error, not only by an attribute. The span's
// error is this marker, never the handler's own cause (logged, redacted, by itself); the answer goes out as before.
// Its answer is kept out of what a tracer renders (`Cause.prettyErrors`: its `toString`, else all its properties as
// JSON, the whole response with them): the span's error reads as the message alone.
class FailedDelivery<A> {
  readonly _tag = "effect-fin/FailedDelivery"
  readonly message = "the webhook delivery was answered 500"
  declare readonly value: A
  constructor(value: A) {
    Object.defineProperty(this, "value", { value, enumerable: false })
  }
  toString(): string {
    return this.message
  }
}
/**
 * `self` in a span `name` (no stack trace captured) that ends as failed when the status `statusOf` reads of its value
 * is 500 (a `FailedDelivery` its error); `self`'s value is passed on all the same.
 */
export const spanFailingOn500 = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  statusOf: (a: A) => number,
  name: string,
  options?: Tracer.SpanOptions
): Effect.Effect<A, E, R> =>
  self.pipe(
    Effect.flatMap((a) => statusOf(a) === 500 ? Effect.fail(new FailedDelivery(a)) : Effect.succeed(a)),
    Effect.withSpan(name, { ...options, captureStackTrace: false }),
    Effect.catchIf((e): e is FailedDelivery<A> => e instanceof FailedDelivery, (e) => Effect.succeed(e.value))
  ) as Effect.Effect<A, E, R>

/** The outcome, recorded on the current span. */
export const settleAs = (status: number, outcome: Outcome): Effect.Effect<Answer> =>
  Effect.as(Spans.annotateOwn({ "fin.webhook.outcome": outcome }), { status, outcome })

// Each answered delivery, once, as it is answered: forged requests or a secret out of step, which the logs say once a
// minute, are counted one by one, to alert on. Labels from two closed lists only.
const deliveries = Metric.counter("effect_fin_webhook_deliveries_total", {
  description: "Webhook deliveries answered, by outcome (and reason, for one rejected)",
  incremental: true
})
/** The delivery counter for one outcome (`"defect"` too, for one the platform answers 500), made once per outcome. */
export const deliveriesOf = memo((outcome) => Metric.tagged(deliveries, "outcome", outcome))
/** The delivery counter for one rejected for `reason` (outcome `"rejected"`), made once per reason. */
export const rejectionsOf = memo((reason) =>
  Metric.taggedWithLabels(deliveries, [MetricLabel.make("outcome", "rejected"), MetricLabel.make("reason", reason)])
)

/**
 * A delivery answered: its outcome recorded on the current span (`settleAs`) and counted, and the response of it,
 * `{"outcome": ...}` with `status`.
 */
export const respond = (status: number, outcome: Outcome) =>
  settleAs(status, outcome).pipe(
    Effect.zipRight(Metric.increment(deliveriesOf(outcome))),
    Effect.as(HttpServerResponse.unsafeJson({ outcome }, { status }))
  )
