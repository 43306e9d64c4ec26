/**
 * Attributes on effect-fin's own spans.
 *
 * @internal
 */
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
