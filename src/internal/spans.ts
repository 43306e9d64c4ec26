/**
 * Attributes and events on effect-fin's own spans: a retry, a call's outcome, the server it calls.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"

/**
 * Sets `values` on the innermost span, effect-fin's own, even when it is a no-op span (made while the tracer is off):
 * `Effect.annotateCurrentSpan` skips such a span and annotates the nearest span around it, a span of the caller's
 * that effect-fin does not own (its `http.response.status_code`, say).
 */
export const annotateOwn = (values: Readonly<Record<string, unknown>>): Effect.Effect<void> =>
  Effect.matchEffect(Effect.currentSpan, {
    onFailure: () => Effect.void,
    onSuccess: (span) =>
      Effect.sync(() => {
        for (const key in values) span.attribute(key, values[key])
      })
  })

/**
 * Adds an event to the innermost span, effect-fin's own (see `annotateOwn`): what happened during a call (a retry and
 * its wait), which the attributes set at its end cannot tell.
 */
export const eventOwn = (name: string, values: Readonly<Record<string, unknown>>): Effect.Effect<void> =>
  Effect.matchEffect(Effect.currentSpan, {
    onFailure: () => Effect.void,
    onSuccess: (span) =>
      Effect.clockWith((clock) => Effect.sync(() => span.event(name, clock.unsafeCurrentTimeNanos(), values)))
  })

/** The path of a checked `baseUrl` (origin and path, no trailing slash): `""` for the service's own address. */
export const basePathOf = (baseUrl: string): string => baseUrl.slice(new URL(baseUrl).origin.length)

/**
 * Records a retry on the call's span, with why and how long it waits (until `until`, ms of the `Clock`; no wait
 * without it, as for the resend after a 401): without it a slow call shows only its number of attempts and the last
 * status, not the failures and waits it went through (retries are logged at Debug only).
 */
export const annotateRetry = (error: object & { readonly _tag: string }, retry: number, until?: number) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const status = statusOf(error)
    return eventOwn("effect-fin.retry", {
      "http.request.resend_count": retry,
      "error.type": error._tag,
      ...(status === undefined ? {} : { "http.response.status_code": status }),
      "effect_fin.retry_wait_ms": until === undefined ? 0 : Math.max(0, Math.round(until - now))
    })
  })

/**
 * `server.address` and `server.port` of a checked `baseUrl`, which OpenTelemetry's HTTP client spans require (a
 * tracing backend's service map names the remote from them): effect-fin's span stands in for the platform's
 * `http.client` span, which had them.
 */
export const serverAttributesOf = (
  baseUrl: string
): { readonly "server.address": string; readonly "server.port": number } => {
  const url = new URL(baseUrl)
  // An IPv6 literal without its brackets, as the conventions write it.
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname
  return {
    "server.address": host,
    "server.port": url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port)
  }
}

/**
 * Records how a call ended on the current span: its attempts, its outcome (`success`, an error's tag, `defect` or
 * `interrupted`), its status. An interruption is no error of the call's (the caller gave it up): no `error.type`.
 */
export const annotateOutcome = (
  attempts: number,
  outcome: string,
  status: number | undefined,
  // Further attributes of the call's end, set in the same step.
  extra?: Readonly<Record<string, unknown>>
): Effect.Effect<void> =>
  annotateOwn({
    ...extra,
    "effect_fin.attempts": attempts,
    "effect_fin.outcome": outcome,
    // OTel's `error.type`, a stable type to group failures by: the exception event's `exception.type` is no such
    // thing for an `ApiError` or a `RateLimitError`, as the OTel SDK takes an error's `code` for it (the service's
    // own code there: `"500"`, `"conflict"`).
    ...(outcome === "success" || outcome === "interrupted" ? {} : { "error.type": outcome }),
    // OTel's name for the resends (retries and the one after a 401), on the call's span: there is none per attempt.
    ...(attempts > 1 ? { "http.request.resend_count": attempts - 1 } : {}),
    ...(status === undefined ? {} : { "http.response.status_code": status })
  })

/** The status of the last answer an error carries, when there was one (not for a timeout, a reset or a refusal). */
export const statusOf = (error: object): number | undefined =>
  "status" in error && typeof error.status === "number" ? error.status : undefined
