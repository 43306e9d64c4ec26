/**
 * Monotonic time: what every local time limit (a call's deadline, a cool-down, a cache's lifetime) is measured in, as
 * a timer measures it. The wall clock can be set back (an NTP step, a virtual machine resumed), which would make a
 * deadline or a cool-down last that much longer.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/**
 * Now, in milliseconds of the `Clock`'s nanosecond time, on a grid of whole microseconds: the process's
 * high-resolution time on the live clock (set to the epoch when it started), the test clock's time under `TestClock`.
 * Read through `unsafeCurrentTimeNanos`, which `TestClock` floors to whole nanoseconds (its `currentTimeNanos` throws
 * at a fractional millisecond, where a jittered backoff wakes up).
 */
export const millis: Effect.Effect<number> = Effect.clockWith((clock) =>
  Effect.sync(() => Number(clock.unsafeCurrentTimeNanos() / 1000n) / 1000)
)

/** `now` (a reading of `millis`) plus `duration`, exactly on the same grid (rounded down). */
export const plus = (now: number, duration: Duration.DurationInput): number => {
  const ms = Duration.toMillis(duration)
  return Number.isFinite(ms) ? (Math.round(now * 1000) + Math.floor(Math.round(ms * 1e6) / 1000)) / 1000 : ms
}

// What a reading can fall short of the time it stands for, in microseconds, near `micros` (see `reached`).
const shortfall = (micros: number): number => Math.max(1, Math.ceil(Math.abs(micros) * 2 ** -51))

/**
 * Whether the reading `now` has reached `limit` (a `plus` result), give or take what a reading can fall short:
 * `TestClock` floors its floating-point time to nanoseconds, so the reading once a cool-down has passed can be a
 * microsecond below the limit (more for a time far past today's, where a millisecond number holds fewer fractional
 * digits), and a cool-down or a cache entry would outlive its time.
 */
export const reached = (now: number, limit: number): boolean => {
  const micros = Math.round(limit * 1000)
  return Math.round(now * 1000) >= micros - shortfall(micros)
}

/**
 * What is surely left from the reading `now` to `limit`: `between` less what a reading can fall short (see
 * `reached`), so that a wait of exactly what is left is not taken to end before `limit` (a `Retry-After` that ends
 * at the deadline would be waited for, only for the next attempt to be refused at it).
 */
export const left = (now: number, limit: number): Duration.Duration => {
  const micros = Math.round(limit * 1000)
  return Duration.millis(Math.max(0, (micros - shortfall(micros) - Math.round(now * 1000)) / 1000))
}

/** The time from one reading (or `plus` result) to another, exactly on the grid; zero when `to` is not later. */
export const between = (from: number, to: number): Duration.Duration =>
  Duration.millis(Math.max(0, (Math.round(to * 1000) - Math.round(from * 1000)) / 1000))
