/**
 * The webhook handler's rejection of a delivery: its status per reason, the response (its connection closed when the
 * body was not read whole), and the log line, said above Debug once per reason until a delivery is handled again.
 *
 * @internal
 */
import * as Headers from "@effect/platform/Headers"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type { WebhookFailureReason, WebhookVerificationError } from "../FinError.js"
import * as Monotonic from "./monotonic.js"
import * as Spans from "./spans.js"
import { rejectionsOf } from "./webhookOutcome.js"

const statusOf: { readonly [R in WebhookFailureReason]: number } = {
  missing_signature: 401,
  bad_signature: 401,
  unsupported_algorithm: 401,
  no_secret: 500,
  malformed_body: 400,
  too_old: 400,
  from_future: 400,
  wrong_environment: 400,
  body_too_large: 413,
  body_timeout: 408
}

/**
 * The headers of a response that closes its connection: for a delivery refused before its body was read whole, and a
 * request not a POST.
 */
export const closing = Headers.fromInput({ connection: "close" })

// 401 says nothing (the verification guide asks for no detail); 400 names the reason (the sender is authenticated by
// then). A delivery refused before its body is read whole (`unread`: 413, 408, and the checks of the headers) has its
// connection closed, rather than the server reading the rest of a body that may never end.
// Rejecting a delivery, and logging it: once per reason at Warning (Error for a 500, our own misconfiguration: no
// secret), then at Debug until a new delivery is handled (a replay of a captured one is no reset) and a minute has
// passed (for a 400, a minute alone: see below). Anyone who can reach the endpoint can send unsigned requests, and a
// secret out of step fails every delivery and redelivery: one line each would flood the logs (the span and the metric
// still count each one), as would one per real delivery with forged requests in between.
const warnAgainAfterMillis = 60_000

/**
 * A handler's rejecter of deliveries, with its own record of what it said: `reject` answers a verification error with
 * its reason's status (its connection closed when `unread`), logs it (above Debug once per reason: see
 * `warnAgainAfterMillis`), records it on the span and counts it; `verified` says a new delivery was handled, so that
 * each reason is said above Debug again once a minute has passed.
 */
export const makeReject = () => {
  // Per reason: when it was last said above Debug, and whether a new delivery was handled since.
  const said = new Map<WebhookVerificationError["reason"], { at: number; handledSince: boolean }>()
  // On monotonic time: a wall clock set back an hour would otherwise keep an outage of 400s at Debug for that hour.
  const reject = (error: WebhookVerificationError, unread = false) =>
    Effect.flatMap(Monotonic.millis, (now) => {
      const status = statusOf[error.reason]
      const headers = unread || status === 413 || status === 408 ? closing : Headers.empty
      const response = status === 401 || status === 500 || status === 413 || status === 408
        ? HttpServerResponse.empty({ status, headers })
        : HttpServerResponse.unsafeJson({ error: error.reason }, { status, headers })
      const last = said.get(error.reason)
      // Most 400s come after the signature verified: each such is an authentic event refused (a payload the service
      // changed, a clock off), so it is said again once a minute while it lasts, not only after a delivery was handled.
      const loud = last === undefined ||
        ((last.handledSince || status === 400) && now - last.at >= warnAgainAfterMillis)
      if (loud) said.set(error.reason, { at: now, handledSince: false })
      const log = !loud ? Effect.logDebug : status === 500 ? Effect.logError : Effect.logWarning
      // What was wrong, for the operator: the error's text (for a body that does not decode, where and what was
      // expected; never a value).
      return log("effect-fin: webhook delivery rejected").pipe(
        Effect.annotateLogs({ reason: error.reason, status, detail: error.message.slice(0, 1024) }),
        Effect.zipRight(Spans.annotateOwn({ "fin.webhook.outcome": "rejected", "fin.webhook.reason": error.reason })),
        Effect.zipRight(Metric.increment(rejectionsOf(error.reason))),
        Effect.as(response)
      )
    })
  const verified = () => {
    for (const entry of said.values()) entry.handledSince = true
  }
  return { reject, verified }
}
