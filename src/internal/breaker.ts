/**
 * A circuit breaker. A call that fails in a way that `trips` opens it: for `cooldown` from then, calls fail at once
 * with `Open` instead of running. After that, one call at a time runs as a probe (the others still get `Open`); the
 * probe's outcome closes the breaker (an answer of any kind: the service is up) or opens it again.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"

/** The breaker is open: the call was not made. `error` is the failure that opened it, `until` when a probe may run. */
export class Open<E> extends Data.TaggedError("CircuitOpen")<{ readonly error: E; readonly until: number }> {}

/** Runs calls through one breaker. */
export type Breaker<E> = <A, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Open<E>, R>

/** A closed breaker. Its state is plain memory: every change is one synchronous step, so fibers cannot interleave. */
export const make = <E>(options: {
  readonly cooldown: Duration.Duration
  readonly trips: (error: E) => boolean
}): Breaker<E> => {
  const cooldown = Duration.toMillis(options.cooldown)
  let opened: { readonly error: E; until: number } | undefined
  let probing = false

  const settle = (probe: boolean) => <A>(exit: Exit.Exit<A, E>) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      if (probe) probing = false
      if (Exit.isSuccess(exit)) {
        opened = undefined
        return
      }
      const failure = Cause.failureOption(exit.cause)
      // An interruption or a defect says nothing about the service: the state stays as it is.
      if (Option.isNone(failure)) return
      opened = options.trips(failure.value) ? { error: failure.value, until: now + cooldown } : undefined
    })

  // Uninterruptible until the outcome is watched: a probe interrupted before that would leave `probing` set for ever.
  return <A, R>(self: Effect.Effect<A, E, R>) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<A, E | Open<E>, R> => {
        if (opened === undefined) return Effect.onExit(restore(self), settle(false))
        if (now < opened.until || probing) return Effect.fail(new Open({ error: opened.error, until: opened.until }))
        probing = true
        return Effect.onExit(restore(self), settle(true))
      })
    )
}
