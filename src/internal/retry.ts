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
import * as Intervals from "effect/ScheduleIntervals"
import {
  ApiError,
  AuthenticationError,
  type FinError,
  RateLimitError,
  RequestValidationError,
  ResponseDecodeError,
  TimeoutError,
  TransportError
} from "../FinError.js"
import { defaultMessage } from "./answerErrors.js"
import * as Durations from "./duration.js"
import type { AttemptError } from "./http.js"
import * as SystemCodes from "./systemCodes.js"

/** A failure that must end the call's retries at once (a token failure, already retried by the provider). */
export class NotRetryable {
  readonly _tag = "NotRetryable"
  constructor(readonly error: FinError) {}
}

/** What a retried attempt can fail with. */
export type Retried = AttemptError | NotRetryable

const BASE = Duration.millis(500)
const CAP = Duration.seconds(8)
/** The longest the policy waits before a retry its error asked no wait of (`backoff`'s cap). */
export const BACKOFF_CAP: Duration.Duration = CAP
const RETRYABLE_STATUS: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504])

/**
 * Whether a transport failure is a connection refused for its setup: a TLS handshake refused on a certificate or for
 * want of a common protocol, or an egress proxy refusing its tunnel (its `code`: `CERT_HAS_EXPIRED`,
 * `DEPTH_ZERO_SELF_SIGNED_CERT`, `ERR_TLS_CERT_ALTNAME_INVALID`, `ERR_SSL_WRONG_VERSION_NUMBER`,
 * `PROXY_TUNNEL_407`...), or the platform client itself closed (`UND_ERR_DESTROYED`, `UND_ERR_CLOSED`): a mistake to
 * mend, not a failure to wait out.
 */
export const isSetupRefusal = (error: FinError | Retried): boolean =>
  error._tag === "TransportError" && error.code !== undefined &&
  (SystemCodes.isSetupRefusal(error.code) || SystemCodes.isClientClosed(error.code))

// A body lost after the head of an answer that is not retried when read whole (a 4xx but 408 and 429, a 3xx, a 5xx but
// 500 and 502-504): its status says what the lost page was, and a refusal does not turn into an outage because its
// page was cut.
const refusedWhenCut = (status: number | undefined): boolean =>
  status !== undefined && (status < 200 || status > 299) && !RETRYABLE_STATUS.has(status)

/**
 * Whether a failed attempt may be tried again (never a 4xx other than 408/429, whether its body was read or lost,
 * never a decode failure, never a connection refused for its setup: `isSetupRefusal`).
 */
export const isRetryable = (error: Retried): boolean => {
  switch (error._tag) {
    case "TransportError":
      return !isSetupRefusal(error) && !refusedWhenCut(error.status)
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

// A body cut short after the head of a 4xx (other than the service's own timeout, 408) arrived: the service answered,
// and refused; the lost page does not make it an unreachable service.
const refusedBeforeTheCut = (status: number | undefined): boolean =>
  status !== undefined && status >= 400 && status <= 499 && status !== 408

/**
 * Whether a call failed for want of the service (unreachable, timing out, failing: a 408, the service's own timeout,
 * or a 5xx), not refused by it (a 4xx, 429 included, even when its body was lost after the head arrived). A 5xx
 * asking for a longer wait than allowed (a maintenance window) is a RateLimitError with its status.
 */
export const isOutage = (error: FinError): boolean =>
  (error._tag === "TransportError" && !refusedBeforeTheCut(error.status)) || error._tag === "TimeoutError" ||
  (error._tag === "ApiError" && error.status === 408) ||
  ((error._tag === "ApiError" || error._tag === "RateLimitError") && error.status !== undefined && error.status >= 500)

/**
 * Whether the same call may succeed later: an outage (`isOutage`) other than a connection refused for its setup
 * (`isSetupRefusal`), or the service asking to slow down (a 429, its body lost or not, or a 5xx asking for a long
 * wait), not a refusal on the call's merits.
 */
export const worthALaterTry = (error: FinError): boolean =>
  error._tag === "RateLimitError" || (error._tag === "TransportError" && error.status === 429) ||
  (isOutage(error) && !isSetupRefusal(error))

/** The wait the service asked for, if any. */
export const retryAfterOf = (error: Retried | FinError): Duration.Duration | undefined =>
  error._tag === "RateLimitError" || error._tag === "ApiError" || error._tag === "TransportError" ||
    error._tag === "AuthenticationError"
    ? error.retryAfter
    : undefined

/** `error` with `retryAfter` as its wait (an error that carries none is itself). */
export const withRetryAfter = (error: FinError, retryAfter: Duration.Duration): FinError => {
  switch (error._tag) {
    case "RateLimitError":
      return new RateLimitError({ ...error, message: error.message, retryAfter })
    case "ApiError":
      return new ApiError({ ...error, message: error.message, retryAfter })
    case "TransportError":
      return new TransportError({ ...error, message: error.message, retryAfter })
    case "AuthenticationError":
      return new AuthenticationError({ ...error, message: error.message, retryAfter })
    default:
      return error
  }
}

/** `error` with `message` in place of its own, the rest as it was. */
export const withMessage = (error: FinError, message: string): FinError => {
  switch (error._tag) {
    case "RequestValidationError":
      return new RequestValidationError({ ...error, message })
    case "AuthenticationError":
      return new AuthenticationError({ ...error, message })
    case "ApiError":
      return new ApiError({ ...error, message })
    case "RateLimitError":
      return new RateLimitError({ ...error, message })
    case "TransportError":
      return new TransportError({ ...error, message })
    case "TimeoutError":
      return new TimeoutError({ ...error, message })
    case "ResponseDecodeError":
      return new ResponseDecodeError({ ...error, message })
  }
}

/**
 * The policy's own delay before retry `n` (1-based): 500 ms, 1 s, 2 s, 4 s, then 8 s, each jittered by x0.8-1.2. At
 * the cap the jitter goes down only (6.4-8 s): capping after it would put every late retry at exactly 8 s.
 */
export const backoff: Schedule.Schedule<Duration.Duration> = Schedule.exponential(BASE, 2).pipe(
  Schedule.jittered,
  Schedule.modifyDelay((raw, delay) => {
    if (Duration.lessThan(raw, CAP)) return delay
    // The jitter factor drawn for this retry (0.8-1.2), mapped onto 0.8-1.0 of the cap.
    const factor = Duration.toMillis(delay) / Duration.toMillis(raw)
    return Duration.millis(Duration.toMillis(CAP) * (0.8 + (factor - 0.8) / 2))
  })
)

/** What `policy` is built from. */
export interface PolicyOptions<E> {
  readonly maxRetries: number
  /** The call retried (`POST /v1/fee-calculation`), for the `operation` annotation of a log line saying why not. */
  readonly operation: string
  /** The longest `Retry-After` honoured: a longer one ends the retries. */
  readonly waitCap: Duration.Duration
  /** What is left of the call's deadline, if it has one: a wait that does not end before it ends the retries. */
  readonly timeLeft?: Effect.Effect<Duration.Duration>
  /** What `timeLeft` runs out at, for messages, when not the call's deadline (a refresh token's last usable time). */
  readonly timeLeftOf?: string
  /**
   * Asked last, once every other check would retry: false ends the retries (the client's retry budget refused one).
   * Asked only then, so that what it counts is retries the policy would make.
   */
  readonly allowed?: Effect.Effect<boolean> | undefined
  /** Runs before each wait, told the error retried and when (epoch milliseconds, on the `Clock`) the wait ends. */
  readonly onRetry: (error: E, retry: number, until: number) => Effect.Effect<void>
}

// `self`, ended where `go`, told the delay before a retry `self` would make, says no.
const gated = <Out, In, R>(
  self: Schedule.Schedule<Out, In, R>,
  go: (delay: Duration.Duration) => Effect.Effect<boolean>
): Schedule.Schedule<Out, In, R> =>
  Schedule.makeWithState(self.initial, (now, input, state) =>
    Effect.flatMap(self.step(now, input, state), (result) => {
      const [next, out, decision] = result
      if (ScheduleDecision.isDone(decision)) return Effect.succeed(result)
      return Effect.map(
        go(Duration.millis(Math.max(0, Intervals.start(decision.intervals) - now))),
        (yes) => yes ? result : [next, out, ScheduleDecision.done] as const
      )
    }))

// `self`, ended when its next delay would not end before `timeLeft` does: sleeping only to be cut off by the deadline
// (or to start an attempt with no time left) would answer later, with a TimeoutError in place of the service's error.
const withinTime = <Out, In, R>(
  self: Schedule.Schedule<Out, In, R>,
  timeLeft: Effect.Effect<Duration.Duration>,
  operation: string,
  timeLeftOf = "the deadline"
): Schedule.Schedule<Out, In, R> =>
  gated(self, (delay) =>
    Effect.flatMap(timeLeft, (left) =>
      Duration.lessThan(delay, left)
        ? Effect.succeed(true)
        : Effect.as(
          Effect.logDebug(
            `effect-fin: not retrying: the next wait of ${
              Durations.formatMillis(delay)
            } would outlast ${timeLeftOf} (${Durations.formatMillis(left, Math.floor)} left)`
          ).pipe(Effect.annotateLogs("operation", operation)),
          false
        )))

/**
 * The schedule for `Effect.retry`: at most `maxRetries` retries of retryable errors; a `Retry-After` (above zero)
 * replaces the backoff when it is within `waitCap` and ends before `timeLeft` does; any other ends the retries at once,
 * and so does a backoff that does not end before `timeLeft`, or a retry `allowed` refuses. `onRetry` runs before each
 * wait.
 */
const policy = <E extends Retried>(
  options: PolicyOptions<E>
): Schedule.Schedule<[[E, Duration.Duration], number], E> =>
  Schedule.identity<E>().pipe(
    Schedule.intersect(backoff),
    Schedule.intersect(Schedule.recurs(options.maxRetries)),
    Schedule.whileInputEffect((error: E) =>
      isRetryable(error)
        ? Effect.map(tooLongFor(error, options), (limit) => limit === undefined)
        : Effect.succeed(false)
    ),
    // A wait of zero (`Retry-After: 0`, a date already past) does not skip the backoff: back to back retries are
    // the last thing a service that is slowing us down needs.
    Schedule.modifyDelay(([[error]], delay) => {
      const wait = retryAfterOf(error)
      return wait === undefined || Duration.isZero(wait) ? delay : wait
    }),
    (schedule) =>
      options.timeLeft === undefined
        ? schedule
        : withinTime(schedule, options.timeLeft, options.operation, options.timeLeftOf),
    (schedule) => {
      const allowed = options.allowed
      return allowed === undefined ? schedule : gated(schedule, () => allowed)
    },
    Schedule.onDecision(([[error], retry], decision) =>
      ScheduleDecision.isDone(decision)
        ? Effect.void
        : options.onRetry(error, retry + 1, Intervals.start(decision.intervals))
    )
  )

// What the error's wait is too long for: `waitCap`, or the deadline (it would not end before); none if it fits.
type Limit = "waitCap" | "deadline"
const tooLongFor = (error: Retried, options: PolicyOptions<never>): Effect.Effect<Limit | undefined> => {
  const wait = retryAfterOf(error)
  if (wait === undefined) return Effect.succeed(undefined)
  if (Duration.greaterThan(wait, options.waitCap)) return Effect.succeed("waitCap")
  return options.timeLeft === undefined
    ? Effect.succeed(undefined)
    : Effect.map(options.timeLeft, (left) => Duration.greaterThanOrEqualTo(wait, left) ? "deadline" : undefined)
}

/**
 * The error a call ends with when a retry's wait would not end before its deadline: the error retried, or, if it is
 * a 5xx whose `Retry-After` set that wait, a `RateLimitError`, as `retry` gives.
 */
export const tooLate = (error: FinError): FinError =>
  error._tag === "ApiError" && error.status >= 500 && error.retryAfter !== undefined &&
    !Duration.isZero(error.retryAfter)
    ? slowDown(error, "deadline")
    : error

// What an ApiError's message adds to its status and operation (`: Service unavailable (field: ...)`), if anything.
const saidBy = ({ message, operation, status }: ApiError): string => {
  const start = operation === undefined ? undefined : defaultMessage(status, operation)
  if (start !== undefined && (message.startsWith(`${start}: `) || message.startsWith(`${start} (`))) {
    return message.slice(start.length)
  }
  return message.trim() === "" || message === start ? "" : `: ${message}`
}

// A wait as a message says it, in whole milliseconds said exactly.
const saidWait = (wait: Duration.Duration | undefined): string => Durations.formatMillis(wait ?? Duration.zero, Math.round)

// A 5xx that asks for a longer wait than allowed is the service telling us to slow down, as a 429 is.
// What the service said, kept: its message (unless the body gave none), code, field errors and body.
const slowDown = (error: ApiError, limit: Limit, timeLeftOf = "the call's deadline"): RateLimitError =>
  new RateLimitError({
    message: `The service answered ${error.status} and asked to wait ${saidWait(error.retryAfter)}, ${
      limit === "waitCap" ? "longer than allowed" : `more than ${timeLeftOf} leaves`
    }${error.operation === undefined ? "" : `, on ${error.operation}`}${saidBy(error)}`,
    status: error.status,
    ...(error.code === undefined ? {} : { code: error.code }),
    ...(error.fieldErrors === undefined ? {} : { fieldErrors: error.fieldErrors }),
    ...(error.body === undefined ? {} : { body: error.body }),
    ...(error.retryAfter === undefined ? {} : { retryAfter: error.retryAfter }),
    ...(error.operation === undefined ? {} : { operation: error.operation }),
    ...(error.attempts === undefined ? {} : { attempts: error.attempts }),
    ...(error.requestId === undefined ? {} : { requestId: error.requestId })
  })

// A 429's message (`Rate limited (429) on <operation>: <what it said>`) with the wait it asked for and why it was not
// waited for, as `slowDown` says a 5xx's.
const waitRefused = (error: RateLimitError, limit: Limit, timeLeftOf = "the call's deadline"): RateLimitError => {
  const start = error.operation === undefined ? undefined : `Rate limited (429) on ${error.operation}`
  if (start === undefined || !error.message.startsWith(start)) return error
  return new RateLimitError({
    ...error,
    message: `Rate limited (429) and asked to wait ${saidWait(error.retryAfter)}, ${
      limit === "waitCap" ? "longer than allowed" : `more than ${timeLeftOf} leaves`
    }, on ${error.operation}${error.message.slice(start.length)}`
  })
}

/**
 * `self` retried under `policy(options)`. A retryable 5xx `ApiError` asking for a longer wait than `waitCap` (a 503
 * asking for two minutes), or one that does not end before `timeLeft`, ends as a `RateLimitError`, as a 429 would (a
 * 408 stays an `ApiError` with `retryAfter`), whether it ended the retries or came after the last one. Without retries
 * (an unsafe call) the wait changes nothing, so the error stays as it came.
 */
export const retry = <A, E extends Retried, R>(
  self: Effect.Effect<A, E, R>,
  options: PolicyOptions<E>
): Effect.Effect<A, E | RateLimitError, R> =>
  Effect.retry(self, policy(options)).pipe(
    Effect.catchAll((error): Effect.Effect<never, E | RateLimitError> =>
      // Only a 5xx (as documented): a 408 asking for a long wait stays the ApiError it is (with its retryAfter), which
      // SubdivisionService's fallback, among others, reads as the service's own timeout.
      options.maxRetries > 0 && error._tag === "ApiError" && error.status >= 500 && isRetryable(error)
        ? Effect.flatMap(
          tooLongFor(error, options),
          (limit) => Effect.fail(limit === undefined ? error : slowDown(error, limit, options.timeLeftOf))
        )
        // A 429 whose wait ended the retries says so too, in the words of the 5xx's, not as one retried until spent.
        : options.maxRetries > 0 && error._tag === "RateLimitError" && error.status === 429
        ? Effect.flatMap(
          tooLongFor(error, options),
          (limit) => Effect.fail(limit === undefined ? error : waitRefused(error, limit, options.timeLeftOf))
        )
        : Effect.fail(error)
    )
  )
