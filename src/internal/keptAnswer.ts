/**
 * The wait a failed token fetch's answer asked for, kept: until it has passed, a fetch sends nothing and fails with
 * that answer (the wait that is left as its `retryAfter`); and which failures are such kept answers, or copies of
 * another process's, so that handing one out does not start the wait again. With it, the rules of what a failed fetch
 * waits: which answers are refusals, the wait an answer asked for as it is kept, the hold of refused credentials, and
 * the pause before the next refresh.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import type { FinError } from "../FinError.js"
import * as Monotonic from "./monotonic.js"
import * as Retry from "./retry.js"

/** After a failed early refresh, how long the current token is used before the next refresh is tried. */
export const REFRESH_PAUSE_MILLIS = 5_000

/**
 * The service refused the request on its merits (a 401, another 4xx but 408 and 429): sent again as it is, it is
 * refused again. On the refresh route, the refresh token; on the issue route, the client's credentials (OAuth servers
 * answer 400 `invalid_client` too); its page lost on the way too (a TransportError with its status): the head refused.
 */
export const isRefusal = (error: FinError): boolean =>
  error._tag === "AuthenticationError" ||
  ((error._tag === "ApiError" || error._tag === "TransportError") && error.status !== undefined &&
    error.status >= 400 && error.status < 500 && !Retry.isRetryable(error))

/**
 * The wait `error` asked for, as it is kept (`maxRetryAfter` at most); none if it asked none.
 */
export const heldWait = (error: FinError, maxRetryAfter: Duration.Duration): Duration.Duration | undefined => {
  const asked = Retry.retryAfterOf(error)
  return asked === undefined ? undefined : Duration.min(asked, maxRetryAfter)
}

/**
 * After the service refused the client's credentials (`isRefusal`, on the issue route), how long fetches fail with that
 * answer without asking again: a revoked secret costs one token request a second, not one per call, against a service
 * that may lock out credentials after failed attempts; short, so that a passing refusal costs little. Not a wait the
 * service asked for: `maxRetryAfter` does not shorten it.
 */
export const REFUSED_CREDENTIALS_HOLD = Duration.seconds(1)

/** A wait kept: until when (monotonic), and the answer that asked for it. */
export interface Quiet {
  readonly until: number
  readonly error: FinError
}

/** A provider's kept wait, and what it knows of the failures it handed out or read from the store. */
export interface KeptAnswer {
  /** The wait kept, while it lasts. */
  readonly keptAt: (monotonic: number) => Quiet | undefined
  /** The kept answer as a caller gets it now (see `make`). */
  readonly quietFailure: (kept: Quiet, monotonic: number) => FinError
  /** Keeps the wait a failed fetch's answer asked for; the pause before the next refresh (see `make`). */
  readonly quietAfter: (cause: Cause.Cause<FinError>, monotonic: number) => number
  /** Ends the wait: a fetch's own success. */
  readonly end: () => void
  /** Whether `error` (as a fiber failed with it) is the kept answer as this provider handed it out. */
  readonly isHandedOut: (error: FinError) => boolean
  /**
   * Takes `error`, read from the store, as a kept answer another process handed out: a copy, not a new answer of the
   * service; `left`, for one that carries no wait of its own (a refusal), the hold its sender had left.
   */
  readonly recordCopy: (error: FinError, left: Duration.Duration | undefined) => void
}

// What a fiber failed with: under a span, `Effect.fail` hands on a proxy of the error (carrying the span), which
// neither set would know.
const original = (error: FinError): FinError => Cause.originalError(error)

/** No wait kept yet; waits asked for are kept for `maxRetryAfter` at most. */
export const make = (maxRetryAfter: Duration.Duration): KeptAnswer => {
  // The last fetch failed with an answer that asked for a wait (its `Retry-After`, which the retries did not wait
  // out, or refused credentials: `REFUSED_CREDENTIALS_HOLD`): until it has passed, a fetch sends nothing and fails
  // with that answer, rather than each caller without a token sending the service another request. The store is
  // still read: another process may have a token by then. Only a fetch's own success ends it early. `until` is
  // monotonic: a wall clock set back must not lengthen the wait.
  let quiet: Quiet | undefined
  // The kept answer as each caller gets it, the wait that is left as its `retryAfter` (a caller, or another process
  // the failure is shared with, that honours it must not wait the whole of it again). Those handed out are
  // remembered, so that failing with one does not start the wait again.
  const handedOut = new WeakSet<FinError>()
  // Kept answers another process handed out, as shared through the store: copies, not new answers of the service.
  const copies = new WeakSet<FinError>()
  // For a copy that carries no wait of its own (a refusal), the hold its sender had left.
  const copyLeft = new WeakMap<FinError, Duration.Duration>()
  // The wait kept, while it lasts.
  const keptAt = (monotonic: number) =>
    quiet !== undefined && !Monotonic.reached(monotonic, quiet.until) ? quiet : undefined
  // A refusal held (it asked no wait) is handed out as it came: a `retryAfter` would tell callers to send it again.
  const quietFailure = (kept: Quiet, monotonic: number): FinError => {
    const error = Retry.retryAfterOf(kept.error) === undefined
      ? kept.error
      : Retry.withRetryAfter(kept.error, Monotonic.between(monotonic, kept.until))
    handedOut.add(error)
    return error
  }

  // After a failed fetch: the wait its answer asked for is kept (`quiet`), unless the failure is a kept answer
  // handed out (no request was sent), for `maxRetryAfter` at most (a wait of days, a maintenance page's or a date
  // from a clock set wrong, must not fail every call for days after the service is back); the pause before the next
  // refresh, at least that wait.
  const quietAfter = (cause: Cause.Cause<FinError>, monotonic: number): number => {
    const failure = Option.getOrUndefined(Option.map(Cause.failureOption(cause), original))
    // A wait still running is not ended by a failure that comes meanwhile (this process sent nothing: one shared
    // by another process through the store) asking no wait, nor lengthened by a copy of a kept answer handed back
    // and forth between processes, each read a little after it was made; a new answer asking a longer wait (the
    // service told another process to come back later) lengthens it.
    const running = keptAt(monotonic)
    if (failure !== undefined && !handedOut.has(failure) && !(running !== undefined && copies.has(failure))) {
      // A refused refresh token is followed by an issue: a fetch that fails with a refusal had its credentials
      // refused. Such a refusal is held for the second at least, whatever its `Retry-After` (0, a date past) and
      // `maxRetryAfter` say: it is not a wait the service asked for. A copy of a kept refusal holds for what its
      // sender had left, not a whole second again (copies handed back and forth would otherwise hold both processes
      // for ever); one that does not say is not held.
      // A copy of a refusal that asked a wait carries what its sender had left as `retryAfter`: held for that, up to
      // the second, whatever `maxRetryAfter` (as a refusal is).
      const capped = heldWait(failure, maxRetryAfter)
      const asked = Retry.retryAfterOf(failure)
      const hold = copies.has(failure)
        ? isRefusal(failure) && capped !== undefined && asked !== undefined
          ? Duration.max(capped, Duration.min(asked, REFUSED_CREDENTIALS_HOLD))
          : capped ?? copyLeft.get(failure)
        : isRefusal(failure)
        ? Duration.max(capped ?? Duration.zero, REFUSED_CREDENTIALS_HOLD)
        : capped
      const until = hold === undefined ? undefined : Monotonic.plus(monotonic, hold)
      if (running === undefined || (until !== undefined && until > running.until)) {
        quiet = until === undefined ? undefined : { until, error: failure }
      }
    }
    return Math.max(
      REFRESH_PAUSE_MILLIS,
      quiet === undefined ? 0 : Duration.toMillis(Monotonic.between(monotonic, quiet.until))
    )
  }

  const end = () => {
    quiet = undefined
  }

  const isHandedOut = (error: FinError) => handedOut.has(original(error))

  const recordCopy = (error: FinError, left: Duration.Duration | undefined) => {
    copies.add(error)
    // No more than a refusal is held for: a record written by someone else (a store without its MAC) must not hold
    // this process for good.
    if (left !== undefined) copyLeft.set(error, Duration.min(left, REFUSED_CREDENTIALS_HOLD))
  }

  return { keptAt, quietFailure, quietAfter, end, isHandedOut, recordCopy }
}
