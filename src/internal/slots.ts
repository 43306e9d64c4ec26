/**
 * A client's limit on requests in flight (`maxConcurrentRequests`): a first-come first-served queue of callers.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"

/**
 * A slot held: `keepUntil(fiber)` keeps it past the end of what runs in it, until `fiber` ends (an attempt left to end
 * on its own, its request still in flight).
 *
 * @internal
 */
export interface Held {
  readonly keepUntil: (fiber: Fiber.RuntimeFiber<unknown>) => void
}

/** @internal */
export interface Slots {
  /**
   * Runs `self` in a slot: at once when one is free, else after waiting for one. `wait` bounds the wait (a call's
   * deadline), through the effect that waits, or by ending the wait with `cut` (no fiber needed to race it); it may
   * fail or be interrupted at any point, and the slot is never lost: one handed over as the wait ended goes on to the
   * next in line.
   */
  readonly withSlot: <A, E, E1>(
    self: (held: Held) => Effect.Effect<A, E>,
    wait: (slot: Effect.Effect<void, E1>, cut: (exit: Exit.Exit<never, E1>) => void) => Effect.Effect<void, E1>
  ) => Effect.Effect<A, E | E1>
}

/** @internal */
export const make = (size: number): Slots => {
  let free = size
  // The callers waiting, first come first served, each as the function that serves it. A slot is handed over by
  // taking the next one out of the line (and completing its Deferred): the handover is in this state, not in a
  // Deferred's or a fiber's result, so a wait cut short just before it (its Deferred already failed) is seen to have
  // been served.
  // A Set keeps them in order and lets one leave in constant time (a line of thousands cut at once by a deadline).
  const waiting = new Set<() => void>()

  const releaseNow = () => {
    const next = waiting.values().next()
    if (next.done) {
      free += 1
    } else {
      waiting.delete(next.value)
      next.value()
    }
  }
  const release = Effect.sync(releaseNow)

  // Run uninterruptibly but for `wait`: taking a free slot is not to be cut between the count and the caller's
  // `ensuring`, and a wait that ends (interrupted, failed, or served as it ended) settles its place in the line.
  const acquire = <E1>(
    wait: (slot: Effect.Effect<void, E1>, cut: (exit: Exit.Exit<never, E1>) => void) => Effect.Effect<void, E1>,
    restore: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E>
  ): Effect.Effect<void, E1> =>
    Effect.suspend(() => {
      if (free > 0) {
        free -= 1
        return Effect.void
      }
      return Effect.flatMap(Deferred.make<void, E1>(), (turn) => {
        const serve = () => Deferred.unsafeDone(turn, Exit.void)
        waiting.add(serve)
        const cut = (exit: Exit.Exit<never, E1>) => Deferred.unsafeDone(turn, exit)
        return Effect.onExit(restore(wait(Deferred.await(turn), cut)), (exit) =>
          Exit.isSuccess(exit) ? Effect.void : Effect.suspend(() =>
            // Not served yet: it leaves the line. Served as the wait ended: the slot goes on.
            waiting.delete(serve) ? Effect.void : release
          ))
      })
    })

  return {
    withSlot: (self, wait) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.zipRight(
          acquire(wait, restore),
          Effect.suspend(() => {
            // Given back once, whichever comes first: the end of `self`, or that of the fiber it was kept for. A
            // `keepUntil` after the end of `self` is too late to keep anything, and never gives it back a second time
            // (which would raise the limit for good).
            let state: "held" | "kept" | "released" = "held"
            const held: Held = {
              keepUntil: (fiber) => {
                if (state !== "held") return
                state = "kept"
                // Called at once when it has ended already.
                fiber.addObserver(releaseNow)
              }
            }
            return Effect.ensuring(
              restore(self(held)),
              Effect.suspend(() => {
                if (state !== "held") return Effect.void
                state = "released"
                return release
              })
            )
          })
        )
      )
  }
}
