/**
 * Time limits that hold in uninterruptible regions too.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"

/**
 * Runs `self` (an effect bounded by its own time limit) so that the limit holds wherever it is called. In an
 * interruptible region it runs as is. In an uninterruptible one (a finalizer, an `acquireRelease` acquire, a region
 * kept whole), no timeout could stop it: it then runs interruptibly in a fiber of its own, which the caller awaits,
 * and which the caller's own interruption does not reach, as the region promises.
 */
export const detachedIfUninterruptible = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.checkInterruptible((interruptible) =>
    interruptible
      ? self
      // The fiber ends with `self`'s exit as its value: a failure is passed on here, not also reported by the runtime
      // as a fiber that "terminated with an unhandled error".
      : Effect.flatMap(
        Effect.forkDaemon(Effect.exit(Effect.interruptible(self))),
        (fiber) => Effect.flatten(Fiber.join(fiber))
      )
  )
