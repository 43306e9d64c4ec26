/**
 * A client's retry budget (`retryBudget`): across all its calls, the retries of the last 10 seconds may be at most
 * 10 a second (100) plus a share of the calls first sent in those 10 seconds. Each call may retry up to `maxRetries`
 * times: with no budget, a service that is down is sent up to `1 + maxRetries` times what its callers ask just when it
 * can least bear it, and every call waits out its backoffs for nothing. With one, a few failures are retried as
 * before, and an outage costs the service at most the share on top (Google's SRE book, "Addressing Cascading
 * Failures"; Finagle's `RetryBudget`). A call whose retry is refused ends with the error of its last attempt.
 *
 * @internal
 */

/** The seconds of the window, one counter each. */
const WINDOW = 10
/** Retries a second allowed whatever the calls: a quiet client's few failures are retried as before. */
const FLOOR_PER_SECOND = 10

/** What `take` found: a retry `allowed`, or `refused`; `spent` and `refilled` mark a change (once each per episode). */
export type Verdict = "allowed" | "refilled" | "refused" | "spent"

/** The budget of one client. Times are monotonic milliseconds (`Monotonic.millis`). */
export interface RetryBudget {
  /** Counts a call's first request, sent at `now`. */
  readonly sent: (now: number) => void
  /** Whether a retry may be sent at `now`; one allowed is counted. */
  readonly take: (now: number) => Verdict
  /** The calls and retries counted in the window ending at `now`, for messages. */
  readonly counts: (now: number) => { readonly calls: number; readonly retries: number }
}

/** A budget letting the retries be `percent` of the calls (0 to 100) on top of the floor. */
export const make = (percent: number): RetryBudget => {
  const buckets = Array.from({ length: WINDOW }, () => ({ second: -Infinity, calls: 0, retries: 0 }))
  let refusing = false
  // The counters of `now`'s second, emptied when they last counted an older one.
  const bucket = (now: number) => {
    const second = Math.floor(now / 1000)
    const found = buckets[second % WINDOW]!
    if (found.second !== second) {
      found.second = second
      found.calls = 0
      found.retries = 0
    }
    return found
  }
  const counts = (now: number) => {
    const since = bucket(now).second - WINDOW
    let calls = 0
    let retries = 0
    for (const counted of buckets) {
      if (counted.second > since) {
        calls += counted.calls
        retries += counted.retries
      }
    }
    return { calls, retries }
  }
  return {
    sent: (now) => {
      bucket(now).calls += 1
    },
    take: (now) => {
      const { calls, retries } = counts(now)
      const was = refusing
      refusing = retries >= FLOOR_PER_SECOND * WINDOW + Math.floor(calls * percent / 100)
      if (refusing) return was ? "refused" : "spent"
      bucket(now).retries += 1
      return was ? "refilled" : "allowed"
    },
    counts
  }
}
