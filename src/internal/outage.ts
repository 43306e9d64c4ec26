/**
 * An outage of a store, as its logs say it: once when it begins, once when it ends, everything between at Debug.
 *
 * It ends with an answer to the operation whose failure began it, or with any answer once a minute has passed with no
 * failure. Not with any answer at all: a store that answers reads but not writes (timeouts under load, writes refused)
 * would then say an outage and its end on every call. Nor only with that operation's: one that is seldom asked (a
 * token cleared after a 401) could keep the outage open for ever, and the next one would go unsaid.
 *
 * @internal
 */

/** How long with no failure before any answer ends an outage. */
export const quietMillis = 60_000

/** @internal */
export interface Outage {
  /** Whether an outage is going on. */
  readonly down: () => boolean
  /** Notes a failure of `operation` at `now` (`Monotonic.millis`); true when it begins an outage. */
  readonly failed: (operation: string, now: number) => boolean
  /** Notes an answer to `operation` at `now` (`Monotonic.millis`); true when it ends the outage. */
  readonly answered: (operation: string, now: number) => boolean
}

/** @internal */
export const make = (): Outage => {
  let downOn: string | undefined
  let lastFailure = 0
  return {
    down: () => downOn !== undefined,
    failed: (operation, now) => {
      lastFailure = now
      if (downOn !== undefined) return false
      downOn = operation
      return true
    },
    answered: (operation, now) => {
      if (downOn === undefined || (operation !== downOn && now - lastFailure < quietMillis)) return false
      downOn = undefined
      return true
    }
  }
}
