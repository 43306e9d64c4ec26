/**
 * Monotonic time: what every local time limit (a call's deadline, a cool-down, a cache's lifetime) is measured in, as
 * a timer measures it. The wall clock can be set back (an NTP step, a virtual machine resumed), which would make a
 * deadline or a cool-down last that much longer.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"

/**
 * Now, in milliseconds of the `Clock`'s `currentTimeNanos`: the process's high-resolution time on the live clock (set
 * to the epoch when it started), the test clock's time under `TestClock`.
 */
export const millis: Effect.Effect<number> = Effect.map(Clock.currentTimeNanos, (nanos) => Number(nanos / 1000n) / 1000)
