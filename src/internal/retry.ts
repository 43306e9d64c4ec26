/**
 * The retry policy shared by token calls and API calls: exponential from 500 ms, factor 2, jitter, capped at 8 s;
 * only transient failures; `Retry-After` honoured up to a cap. Delays come from Effect's `Clock` and `Random`.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import type { FinError } from "../FinError.js"
import type { AttemptError } from "./http.js"

/** A failure that must end the call's retries at once (a token failure, already retried by the provider). */
export class NotRetryable {
  readonly _tag = "NotRetryable"
  constructor(readonly error: FinError) {}
}

/** What a retried attempt can fail with. */
export type Retried = AttemptError | NotRetryable

const BASE = Duration.millis(500)
const CAP = Duration.seconds(8)
const RETRYABLE_STATUS: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504])

/** Whether a failed attempt may be tried again (never a 4xx other than 408/429, never a decode failure). */
export const isRetryable = (error: Retried): boolean => {
  switch (error._tag) {
    case "TransportError":
    case "RateLimitError":
      return true
    case "TimeoutError":
      return error.kind !== "deadline"
    case "ApiError":
      return RETRYABLE_STATUS.has(error.status)
    case "AuthenticationError":
    case "ResponseDecodeError":
    case "NotRetryable":
      return false
  }
}

/** The wait the service asked for, if any. */
export const retryAfterOf = (error: Retried): Duration.Duration | undefined =>
  error._tag === "RateLimitError" || error._tag === "ApiError" ? error.retryAfter : undefined

/** The policy's own delay before retry `n` (1-based), before jitter: 500 ms, 1 s, 2 s, 4 s, 8 s, 8 s, ... */
export const backoff: Schedule.Schedule<Duration.Duration> = Schedule.exponential(BASE, 2).pipe(
  Schedule.jittered,
  Schedule.modifyDelay((_, delay) => Duration.min(delay, CAP))
)

/**
 * The schedule for `Effect.retry`: at most `maxRetries` retries of retryable errors; a `Retry-After` replaces the
 * backoff when it is within `waitCap` (evaluated at each retry, so it can shrink with the deadline); a longer one ends
 * the retries at once. `onRetry` runs before each wait.
 */
export const policy = <E extends Retried>(options: {
  readonly maxRetries: number
  readonly waitCap: Effect.Effect<Duration.Duration>
  readonly onRetry: (error: E, retry: number) => Effect.Effect<void>
}): Schedule.Schedule<[[E, Duration.Duration], number], E> =>
  Schedule.identity<E>().pipe(
    Schedule.intersect(backoff),
    Schedule.intersect(Schedule.recurs(options.maxRetries)),
    Schedule.whileInputEffect((error: E) => {
      if (!isRetryable(error)) return Effect.succeed(false)
      const wait = retryAfterOf(error)
      return wait === undefined
        ? Effect.succeed(true)
        : Effect.map(options.waitCap, (cap) => Duration.lessThanOrEqualTo(wait, cap))
    }),
    Schedule.modifyDelay(([[error]], delay) => retryAfterOf(error) ?? delay),
    Schedule.onDecision(([[error], retry], decision) =>
      ScheduleDecision.isDone(decision) ? Effect.void : options.onRetry(error, retry + 1)
    )
  )
