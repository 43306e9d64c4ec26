/**
 * The retry waits of a shared token fetch, announced to the callers waiting on it: one whose deadline comes before the
 * fetch's next try ends at once with the fetch's error, rather than being cut off at its deadline.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import type { FinError } from "../FinError.js"
import * as Monotonic from "./monotonic.js"
import * as Retry from "./retry.js"

/**
 * A wait of the token fetch before it tries again (see `pastDeadline`): its error, when it ends (on monotonic time),
 * and the deferred the next one is announced in.
 */
export interface RetryWait {
  readonly error: FinError
  readonly until: number
  readonly next: Deferred.Deferred<RetryWait>
}

/** A provider's announced waits; `waiting` is cleared when the fetch tries again or ends. */
export interface Waits {
  // While the fetch waits to try again: the failure it retries and when its next try starts. Each wait is announced
  // to the callers waiting on the fetch, so that one whose deadline comes first ends at once (`pastDeadline`).
  waiting: RetryWait | undefined
  announce: Deferred.Deferred<RetryWait>
}

/** No wait yet. */
export const make = (): Waits => ({ waiting: undefined, announce: Deferred.unsafeMake<RetryWait>(FiberId.none) })

/**
 * Announces the wait before the fetch's next try. `until` is on the wall clock (the schedule's); it is announced on
 * monotonic time, as callers' deadlines are.
 */
export const announceWait = (waits: Waits, error: FinError, until: number) =>
  Effect.flatMap(Effect.zip(Clock.currentTimeMillis, Monotonic.millis), ([wall, monotonic]) =>
    Effect.sync(() => {
      const next = Deferred.unsafeMake<RetryWait>(FiberId.none)
      waits.waiting = { error, until: until - wall + monotonic, next }
      Deferred.unsafeDone(waits.announce, Exit.succeed(waits.waiting))
      waits.announce = next
    }))

/** Fails with the fetch's error as soon as the fetch is to wait past `deadline` (monotonic) before trying again. */
export const pastDeadline = (waits: Waits, deadline: number): Effect.Effect<never, FinError> => {
  const watch = (wait: RetryWait | undefined, next: Deferred.Deferred<RetryWait>): Effect.Effect<never, FinError> =>
    wait !== undefined && wait.until >= deadline
      ? Effect.fail(Retry.tooLate(wait.error))
      : Effect.flatMap(Deferred.await(next), (announced) => watch(announced, announced.next))
  return Effect.suspend(() => watch(waits.waiting, waits.announce))
}
