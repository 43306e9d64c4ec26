/**
 * A circuit breaker. A request whose failure is judged `"down"` opens it: for `cooldown` from then, callers fail at
 * once with `CircuitOpen` instead of running. After that, one caller at a time runs as a probe (the others still get
 * `CircuitOpen`); its request's outcome closes the breaker (`"up"`: the service answered), opens it again (`"down"`)
 * or leaves it as it is (`"unknown"`: an interruption, a defect, a limit of the caller's own, a request never sent).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Inspect from "./inspect.js"
import * as Monotonic from "./monotonic.js"

/**
 * The breaker is open: the call was not made. `error` is the failure that opened it, `retryIn` how long until a probe
 * may run (a duration, not a time: the breaker's clock is monotonic, no date).
 */
export class CircuitOpen<E> extends Data.TaggedError("CircuitOpen")<{
  readonly error: E
  readonly retryIn: Duration.Duration
  /** Whether a probe is in flight (then `retryIn` is zero). */
  readonly probing: boolean
}> {}

Inspect.showUnwrapped(CircuitOpen)

/** What a failure says about the service. */
export type Verdict = "up" | "down" | "unknown"

/** A breaker: `guard` admits callers, `track` counts the outcome of each request. */
export interface Breaker<E> {
  /**
   * Runs `self` if the breaker lets the caller in: at once while closed; as the probe (`probe` is true, one caller at
   * a time) once the cool-down has passed; otherwise fails with `CircuitOpen`. A probe that ends with no tracked
   * request having settled the breaker (it made none) frees the probe for the next caller.
   */
  readonly guard: <A, E2, R>(self: (probe: boolean) => Effect.Effect<A, E2, R>) => Effect.Effect<A, E2 | CircuitOpen<E>, R>
  /**
   * Runs one request and counts its outcome, read by `judge`, if the breaker has not changed since the request began:
   * a slow request from before an outage (or before the recovery) cannot reopen or close it afterwards, whoever
   * waits for it.
   */
  readonly track: <A, R>(self: Effect.Effect<A, E, R>, judge: (error: E) => Verdict) => Effect.Effect<A, E, R>
  /** Whether it is open now (a cool-down, or a probe, whose outcome will close it or open it again). */
  readonly isOpen: () => boolean
}

/** A breaker that is never open: every caller is let in and nothing is counted. */
export const none = <E>(): Breaker<E> => ({
  guard: (self) => self(false),
  track: (self) => self,
  isOpen: () => false
})

type State<E> =
  | { readonly _tag: "Closed" }
  | {
    readonly _tag: "Open"
    readonly error: E
    readonly since: number
    readonly until: number
    readonly probing: boolean
  }

/**
 * A closed breaker. Its state is plain memory: every change is one synchronous step, so fibers cannot interleave;
 * each change is a new state object, which is how a request tells whether anything changed since it began. It stays
 * open for `cooldown` of the failure that opened it. `onOpen` runs when a request opens it (`again`: a probe failed),
 * with that cool-down; `onClose` when a probe's request closes it, with the last failure and how long the breaker
 * stayed open.
 */
export const make = <E>(options: {
  readonly cooldown: (error: E) => Duration.Duration
  readonly onOpen: (error: E, again: boolean, cooldown: Duration.Duration) => Effect.Effect<void>
  readonly onClose: (error: E, openFor: Duration.Duration) => Effect.Effect<void>
}): Effect.Effect<Breaker<E>> =>
  Effect.sync(() => {
    let state: State<E> = { _tag: "Closed" }

    const settle = (began: State<E>, judge: (error: E) => Verdict) => <A>(exit: Exit.Exit<A, E>) =>
      Effect.flatMap(Monotonic.millis, (now) => {
        if (state !== began) return Effect.void
        // An interruption or a defect says nothing about the service.
        const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
        const verdict: Verdict = Exit.isSuccess(exit) ? "up" : Option.isSome(failure) ? judge(failure.value) : "unknown"
        if (verdict === "down" && Option.isSome(failure)) {
          const since = began._tag === "Open" ? began.since : now
          const cooldown = options.cooldown(failure.value)
          state = { _tag: "Open", error: failure.value, since, until: Monotonic.plus(now, cooldown), probing: false }
          return options.onOpen(failure.value, began._tag === "Open", cooldown)
        }
        if (began._tag === "Open" && verdict === "unknown") {
          state = { ...began, probing: false }
        } else if (began._tag === "Open") {
          state = { _tag: "Closed" }
          return options.onClose(began.error, Monotonic.between(began.since, now))
        }
        return Effect.void
      })

    // Both are uninterruptible until the outcome is watched: an interruption in between would leave a probe for ever.
    const guard = <A, E2, R>(self: (probe: boolean) => Effect.Effect<A, E2, R>) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(Monotonic.millis, (now): Effect.Effect<A, E2 | CircuitOpen<E>, R> => {
          const current = state
          if (current._tag === "Closed") return restore(self(false))
          if (!Monotonic.reached(now, current.until) || current.probing) {
            const retryIn = Monotonic.between(now, current.until)
            return Effect.fail(new CircuitOpen({ error: current.error, retryIn, probing: current.probing }))
          }
          const probe: State<E> = { ...current, probing: true }
          state = probe
          return Effect.ensuring(
            restore(Effect.suspend(() => self(true))),
            Effect.sync(() => {
              if (state === probe) state = { ...probe, probing: false }
            })
          )
        })
      )

    const track = <A, R>(self: Effect.Effect<A, E, R>, judge: (error: E) => Verdict) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() => Effect.onExit(restore(self), settle(state, judge)))
      )

    return { guard, track, isOpen: () => state._tag === "Open" }
  })
