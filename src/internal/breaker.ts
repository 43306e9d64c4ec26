/**
 * A circuit breaker. A call whose failure is judged `"down"` opens it: for `cooldown` from then, calls fail at once
 * with `CircuitOpen` instead of running. After that, one call at a time runs as a probe (the others still get
 * `CircuitOpen`); the probe's outcome closes the breaker (`"up"`: the service answered), opens it again (`"down"`) or
 * leaves it as it is (`"unknown"`: an interruption, a defect, a deadline of the caller's own).
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
export class CircuitOpen<E> extends Data.TaggedError("CircuitOpen")<{
  readonly error: E
  readonly until: number
  /** Whether a probe is in flight (then `until` has passed). */
  readonly probing: boolean
}> {}

/** What a failure says about the service. */
export type Verdict = "up" | "down" | "unknown"

/** Runs calls through one breaker; `judge` reads a failure of this call. */
export type Breaker<E> = <A, R>(
  self: Effect.Effect<A, E, R>,
  judge: (error: E) => Verdict
) => Effect.Effect<A, E | CircuitOpen<E>, R>

type State<E> =
  | { readonly _tag: "Closed"; readonly generation: number }
  | {
    readonly _tag: "Open"
    readonly generation: number
    readonly error: E
    readonly since: number
    readonly until: number
    readonly probing: boolean
  }

/**
 * A closed breaker. Its state is plain memory: every change is one synchronous step, so fibers cannot interleave.
 * Each change starts a new generation, and a call's outcome counts only if nothing changed since it began: a slow
 * call from before an outage (or before the recovery) cannot reopen or close the breaker afterwards.
 * `onOpen` runs when a call opens it (not when a probe reopens it); `onClose` when a probe closes it, with the last
 * failure and the time the breaker first opened.
 */
export const make = <E>(options: {
  readonly cooldown: Duration.Duration
  readonly onOpen: (error: E) => Effect.Effect<void>
  readonly onClose: (error: E, since: number) => Effect.Effect<void>
}): Effect.Effect<Breaker<E>> =>
  Effect.sync(() => {
    const cooldown = Duration.toMillis(options.cooldown)
    let state: State<E> = { _tag: "Closed", generation: 0 }

    const settle = (began: State<E>, judge: (error: E) => Verdict) => <A>(exit: Exit.Exit<A, E>) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        if (state !== began) return Effect.void
        const generation = began.generation + 1
        // An interruption or a defect says nothing about the service.
        const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
        const verdict: Verdict = Exit.isSuccess(exit) ? "up" : Option.isSome(failure) ? judge(failure.value) : "unknown"
        if (verdict === "down" && Option.isSome(failure)) {
          const since = began._tag === "Open" ? began.since : now
          state = { _tag: "Open", generation, error: failure.value, since, until: now + cooldown, probing: false }
          if (began._tag === "Closed") return options.onOpen(failure.value)
        } else if (began._tag === "Open" && verdict === "unknown") {
          state = { ...began, generation, probing: false }
        } else if (began._tag === "Open") {
          state = { _tag: "Closed", generation }
          return options.onClose(began.error, began.since)
        }
        return Effect.void
      })

    // Uninterruptible until the outcome is watched: a probe interrupted before that would leave it probing for ever.
    return <A, R>(self: Effect.Effect<A, E, R>, judge: (error: E) => Verdict) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<A, E | CircuitOpen<E>, R> => {
          const current = state
          if (current._tag === "Closed") return Effect.onExit(restore(self), settle(current, judge))
          if (now < current.until || current.probing) {
            return Effect.fail(new CircuitOpen({ error: current.error, until: current.until, probing: current.probing }))
          }
          const probe: State<E> = { ...current, generation: current.generation + 1, probing: true }
          state = probe
          return Effect.onExit(restore(self), settle(probe, judge))
        })
      )
  })
