/**
 * Monotonic time: what every local time limit (a call's deadline, a cool-down, a cache's lifetime) is measured in, as
 * a timer measures it. The wall clock can be set back (an NTP step, a virtual machine resumed), which would make a
 * deadline or a cool-down last that much longer.
 *
 * @internal
 */
import * as Effect from "effect/Effect"

/**
 * Now, in milliseconds of the `Clock`'s nanosecond time: the process's high-resolution time on the live clock (set to
 * the epoch when it started), the test clock's time under `TestClock`. Read through `unsafeCurrentTimeNanos`, which
 * `TestClock` rounds to whole nanoseconds (its `currentTimeNanos` throws at a fractional millisecond, where a jittered
 * backoff wakes up).
 */
export const millis: Effect.Effect<number> = Effect.clockWith((clock) =>
  Effect.sync(() => Number(clock.unsafeCurrentTimeNanos() / 1000n) / 1000)
)
