/**
 * The time limits of attempts and waits: `Effect.timeoutFail` at a fraction of its cost on the live clock, holding in
 * an uninterruptible region and over an attempt that ignores interruption, which is left to end on its own.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DefaultServices from "effect/DefaultServices"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Closing from "./closing.js"
import { detachedIfUninterruptible } from "./detached.js"
import * as Monotonic from "./monotonic.js"
import * as Turn from "./turn.js"

const liveClock = Context.get(DefaultServices.liveServices, Clock.Clock)
// Longer timers never fire, as with the live clock's own `sleep`.
const MAX_TIMER_MILLIS = 2 ** 31 - 1
const TimedOut: unique symbol = Symbol("effect-fin/TimedOut")
const Closed: unique symbol = Symbol("effect-fin/Closed")
// How an attempt's wait ends: its exit (as its fiber's value), its time limit, or its client's closing.
type Outcome<A, E> = Exit.Exit<Exit.Exit<A, E>> | typeof TimedOut | typeof Closed

/**
 * Tells an attempt's fiber to stop, and waits for it to, but for one turn of the event loop at most: a client that
 * honours interruption has stopped by then (its request aborted, its socket freed), and one that ignores it (an
 * uninterruptible wrapper of the user's) is left to end on its own rather than hold its caller past a time limit.
 */
const stopWithinTurn = (
  fiber: Fiber.RuntimeFiber<unknown>,
  onLeft?: (fiber: Fiber.RuntimeFiber<unknown>) => void
): Effect.Effect<void> =>
  Effect.fiberIdWith((caller) =>
    Effect.async<void>((resume) => {
      let done = false
      const finish = (then: Effect.Effect<void>) => {
        if (done) return
        done = true
        fiber.removeObserver(stopped)
        cancel()
        resume(then)
      }
      const stopped = () => finish(Effect.void)
      const cancel = Turn.next(() => {
        // Told before the caller goes on: what the attempt holds (its slot) is to be kept until it ends.
        onLeft?.(fiber)
        finish(leftRunning())
      })
      // At once when it has ended already.
      fiber.addObserver(stopped)
      fiber.unsafeInterruptAsFork(caller)
    })
  )

// Said at Warning the first time in a process (each left attempt keeps its request, socket and memory until it ends
// on its own, so a client that ignores interruption must be seen), then at Debug: a busy event loop can delay the stop
// of an attempt that does honour it.
let leftRunningSaid = false
const leftRunning = (): Effect.Effect<void> => {
  const message = "effect-fin: an attempt told to stop (its time limit, its caller's interruption or its client's " +
    "closing) had not stopped a turn of the event loop later, and is left to end on its own: its HTTP client or " +
    "token store may ignore interruption (an Effect.uninterruptible wrapper), or the event loop was busy"
  if (leftRunningSaid) return Effect.logDebug(message)
  leftRunningSaid = true
  return Effect.logWarning(`${message} (said once; later ones at Debug)`)
}

/**
 * `Effect.timeoutFail`, at a quarter of its cost on the live clock, and a limit that holds in an uninterruptible
 * region too (a call made from a finalizer must not wait on a stalled server for ever; see
 * `detachedIfUninterruptible`), and over an attempt that ignores interruption. `Effect.timeoutFail` races `self` in one
 * child fiber against `Clock.sleep` in a second one; on the live clock (whose `sleep` is a `setTimeout`) this races the
 * one fiber against the `setTimeout` itself; any other clock (`TestClock`, a user's own) takes `Effect.timeoutOption`.
 * The outcomes are the same: `self`'s exit, or, once the time is up, `self` told to stop, then `onTimeout()`.
 * Interrupting an interruptible caller interrupts `self`. Given a `closing`, `self` is interrupted once it closes too,
 * and the result is an interruption (not in an uninterruptible region, which is kept whole up to the time limit).
 * Each time `self` is told to stop, it is waited for one turn of the event loop at most (`stopWithinTurn`), where
 * `Effect.timeoutFail` waits as long as it takes: a client of the user's that ignores interruption (an
 * `Effect.uninterruptible` wrapper, a pool that masks it) would hold the call past its limit. For the same reason
 * `self` runs in a daemon fiber: a child's end would hold up its caller's own. Unlike `Effect.timeoutFail`'s, `self`'s
 * fiber refs are not joined into the caller's on success: nothing an attempt or a token step sets is the caller's
 * (their log annotations, spans and call options are scoped), and the join was about a quarter of this timer's cost
 * per call.
 */
export const timeoutFail = <A, E, E1>(
  self: Effect.Effect<A, E>,
  duration: Duration.Duration,
  onTimeout: () => E1,
  closing?: Closing.Closing,
  onLeft?: (fiber: Fiber.RuntimeFiber<unknown>) => void
): Effect.Effect<A, E | E1> =>
  Effect.checkInterruptible((interruptible) => {
    const closes = interruptible ? closing : undefined
    return detachedIfUninterruptible(Effect.clockWith((clock) => {
      if (clock !== liveClock) {
        // `self` in a fiber of its own, awaited, not joined: `Effect.timeoutFail` joins the fiber refs of the fiber it
        // runs `self` in into the caller's, which the live clock's path does not (no clock tells the two apart).
        // The closing is raced against the wait, not against the whole: a race ends at its caller's interruption
        // without waiting for its fibers, so `self` would be told to stop (and `onLeft` called) after this returned.
        return Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(Effect.forkDaemon(Effect.exit(restore(self))), (fiber) => {
            const awaited = closes === undefined
              ? Fiber.await(fiber)
              : Closing.interruptOnClose(Fiber.await(fiber), closes)
            return Effect.flatMap(
              Effect.onInterrupt(
                restore(Effect.timeoutOption(awaited, duration)),
                () => stopWithinTurn(fiber, onLeft)
              ),
              (exit): Effect.Effect<A, E | E1> =>
                Option.isSome(exit)
                  ? Effect.flatten(exit.value)
                  : Effect.zipRight(stopWithinTurn(fiber, onLeft), Effect.fail(onTimeout()))
            )
          })
        )
      }
      const millis = Duration.toMillis(duration)
      // The attempt ends with `self`'s exit as its value: a failure is passed on here, not reported by the runtime as
      // a fiber that "terminated with an unhandled error".
      return Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(Effect.forkDaemon(Effect.exit(restore(self))), (fiber) => {
          let done = false
          let timer: ReturnType<typeof setTimeout> | undefined
          let unsubscribe: (() => void) | undefined
          let resume: (outcome: Outcome<A, E>) => void = () => undefined
          const settle = () => {
            done = true
            if (timer !== undefined) clearTimeout(timer)
            unsubscribe?.()
          }
          const end = (outcome: Outcome<A, E>) => {
            if (done) return
            settle()
            // (Not when the fiber's end is what calls it: its observers are done with then.)
            if (typeof outcome === "symbol") fiber.removeObserver(end)
            resume(outcome)
          }
          // No canceler (Effect wraps an async that has one in `onInterrupt`): an interruption is handled below, where
          // the wait's failure is seen anyway.
          const outcome = Effect.async<Outcome<A, E>>((wake) => {
            resume = (outcome) => wake(Effect.succeed(outcome))
            timer = millis <= MAX_TIMER_MILLIS ? setTimeout(() => end(TimedOut), millis) : undefined
            // Called at once when the client has closed already: nothing then to stop listening to, or to observe.
            const stop = closes?.onClose(() => end(Closed))
            if (done) return void stop?.()
            unsubscribe = stop
            fiber.addObserver(end)
          })
          return Effect.matchCauseEffect(restore(outcome), {
            // Only an interruption, before the wait or during it: the attempt is told to stop all the same.
            onFailure: (cause) => {
              settle()
              fiber.removeObserver(end)
              return Effect.zipRight(stopWithinTurn(fiber, onLeft), Effect.failCause(cause))
            },
            onSuccess: (outcome): Effect.Effect<A, E | E1> =>
              outcome === TimedOut
                ? Effect.zipRight(stopWithinTurn(fiber, onLeft), Effect.fail(onTimeout()))
                : outcome === Closed
                ? Effect.zipRight(stopWithinTurn(fiber, onLeft), Effect.interrupt)
                : Exit.isFailure(outcome)
                ? Effect.failCause(outcome.cause)
                : outcome.value
          })
        })
      )
    }))
  })

/**
 * `self` cut at `deadline` (milliseconds, on `Monotonic.millis`) with `onDeadline()`, as `timeoutFail` cuts it; failed
 * with it at once when the deadline has passed.
 */
export const timeoutAt = <A, E, E1>(
  self: Effect.Effect<A, E>,
  deadline: number,
  onDeadline: () => E1,
  closing?: Closing.Closing
): Effect.Effect<A, E | E1> =>
  Effect.flatMap(
    Monotonic.millis,
    (now) =>
      Monotonic.reached(now, deadline)
        ? Effect.fail(onDeadline())
        : timeoutFail(self, Monotonic.between(now, deadline), onDeadline, closing)
  )

/**
 * A wait this library ends itself (`cut` ends it with an exit: a slot's turn) cut at `deadline` with `onDeadline()`,
 * and interrupted once `closing` closes (an interruptible caller only), as `timeoutAt` cuts any effect. On the live
 * clock a timer and a listener call `cut`: no fiber of its own, so callers in line for a slot cost no more than they
 * must; on any other clock (`TestClock`) through `timeoutAt`.
 */
export const cutAt = <E1>(deadline: number, onDeadline: () => E1, closing?: Closing.Closing) =>
(
  wait: Effect.Effect<void, E1>,
  cut: (exit: Exit.Exit<never, E1>) => void
): Effect.Effect<void, E1> =>
  Effect.clockWith((clock) =>
    clock !== liveClock
      ? timeoutAt(wait, deadline, onDeadline, closing)
      : Effect.flatMap(Monotonic.millis, (now): Effect.Effect<void, E1> => {
        if (Monotonic.reached(now, deadline)) return Effect.fail(onDeadline())
        const millis = Duration.toMillis(Monotonic.between(now, deadline))
        return Effect.checkInterruptible((interruptible) =>
          Effect.fiberIdWith((caller) =>
            // Set and guarded in one uninterruptible step: an interruption between the two (a fiber yields wherever
            // its op budget runs out) would leave the listener in the closing's set and the timer armed.
            Effect.acquireUseRelease(
              Effect.sync(() => ({
                timer: millis <= MAX_TIMER_MILLIS ? setTimeout(() => cut(Exit.fail(onDeadline())), millis) : undefined,
                stop: interruptible ? closing?.onClose(() => cut(Exit.interrupt(caller))) : undefined
              })),
              () => wait,
              ({ stop, timer }) =>
                Effect.sync(() => {
                  clearTimeout(timer)
                  stop?.()
                })
            )
          )
        )
      })
  )
