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
