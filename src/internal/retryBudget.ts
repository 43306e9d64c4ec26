/**
 * A client's retry budget (`retryBudget`), one per operation: across its calls, the retries of the last 10 seconds
 * (counted by whole seconds: the window moves on a second at a time) may be at most 100 (10 a second) plus a share of
 * the calls first sent in those seconds. Each call may retry up to `maxRetries` times: with no budget, a service
 * that is down is sent up to `1 + maxRetries` times what its callers ask just when it can least bear it, and every
 * call waits out its backoffs for nothing. With one, a few failures are retried as before, and an outage costs the
 * service at most the share on top (Google's SRE book, "Addressing Cascading Failures"; Finagle's `RetryBudget`). A
 * call whose retry is refused ends with the error of its last attempt. One per operation, so that an endpoint that
 * fails (a report nobody waits for) does not spend the retries of another (the fee quote).
 *
 * @internal
 */

/** The seconds of the window, one counter each. */
const WINDOW = 10
/** Retries a second allowed whatever the calls: a quiet client's few failures are retried as before. */
const FLOOR_PER_SECOND = 10

/** An episode of refusals, told when it ends: how many retries it refused, from the first refusal to the last. */
export interface Episode {
  readonly refused: number
  readonly millis: number
}

/**
 * What `take` found: a retry `allowed`, or `refused`; `spent` is the first refusal of an episode of them. An `Episode`
 * is a retry allowed that ended one (the first call or retry once a whole window has passed with no refusal).
 */
export type Verdict = "allowed" | "refused" | "spent" | Episode

/** The budget of one client's operation. Times are monotonic milliseconds (`Monotonic.millis`). */
export interface RetryBudget {
  /** The share of the calls allowed as retries on top of the floor, in percent. */
  readonly percent: number
  /** Counts a call's first request, sent at `now`; the episode it ended, if any. */
  readonly sent: (now: number) => Episode | undefined
  /** Whether a retry may be sent at `now`; one allowed is counted, as of `now`. */
  readonly take: (now: number) => Verdict
  /** Gives back a retry counted as of `at` and then not sent (its caller gave up during the backoff, say). */
  readonly refund: (at: number) => void
  /** The calls and retries counted in the window ending at `now`, for messages. */
  readonly counts: (now: number) => { readonly calls: number; readonly retries: number }
}

/** A budget letting the retries be `percent` of the calls (0 to 100) on top of the floor. */
export const make = (percent: number): RetryBudget => {
  const buckets = Array.from({ length: WINDOW }, () => ({ second: -Infinity, calls: 0, retries: 0 }))
  // An episode of refusals lasts until a whole window passes without one: a budget at its limit through an outage
  // refuses and allows by turns, and is told of once, not at every turn. Its end is told by the first call or retry
  // after that window: the outage is over when calls go out and no retry is refused.
  let episode: { first: number; refused: number } | undefined
  let lastRefused = -Infinity
  const ended = (now: number): Episode | undefined => {
    if (episode === undefined || now - lastRefused < WINDOW * 1000) return undefined
    const over = { refused: episode.refused, millis: lastRefused - episode.first }
    episode = undefined
    return over
  }
  const secondOf = (now: number) => Math.floor(now / 1000)
  // The counters of `second`, emptied when they last counted an older one (a clock below zero too: a `Clock` of the
  // user's).
  const slot = (second: number) => buckets[((second % WINDOW) + WINDOW) % WINDOW]!
  const bucket = (second: number) => {
    const found = slot(second)
    if (found.second !== second) {
      found.second = second
      found.calls = 0
      found.retries = 0
    }
    return found
  }
  const counts = (now: number) => {
    const current = secondOf(now)
    let calls = 0
    let retries = 0
    for (const counted of buckets) {
      // A bucket of a later second (a client used under the live clock, then under a TestClock) is not this window's.
      if (counted.second > current - WINDOW && counted.second <= current) {
        calls += counted.calls
        retries += counted.retries
      }
    }
    return { calls, retries }
  }
  return {
    percent,
    sent: (now) => {
      bucket(secondOf(now)).calls += 1
      return ended(now)
    },
    take: (now) => {
      const { calls, retries } = counts(now)
      if (retries >= FLOOR_PER_SECOND * WINDOW + Math.floor(calls * percent / 100)) {
        // An episode not yet told over (nothing sent since its last refusal's window passed) goes on: its end is told
        // once, with all it refused.
        lastRefused = now
        if (episode !== undefined) {
          episode.refused += 1
          return "refused"
        }
        episode = { first: now, refused: 1 }
        return "spent"
      }
      bucket(secondOf(now)).retries += 1
      return ended(now) ?? "allowed"
    },
    refund: (at) => {
      const second = secondOf(at)
      const found = slot(second)
      // Gone with its second: nothing to give back.
      if (found.second === second && found.retries > 0) found.retries -= 1
    },
    counts
  }
}
