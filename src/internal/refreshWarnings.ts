/**
 * The token provider's refresh warnings: a failed refresh, the token's loss and the end of an outage, each said once
 * at Warning (or Info, for the end), the tries in between at Debug; the once-only flags they keep, the pairs handed on
 * without a fetch (whose settling is no token fetched again), and the step of a fetch's settling that reads and resets
 * them.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type { FinError } from "../FinError.js"
import * as TokenEndpoint from "./tokenEndpoint.js"

type Access = TokenEndpoint.Access
type Pair = TokenEndpoint.Pair

/** A provider's refresh warnings and the flags that keep each said once an outage. */
export interface RefreshWarnings {
  /** Says a failed refresh (for `reason`, `TokenEndpoint.failedBy`) that goes on with the current token. */
  readonly refreshFailed: (reason: string) => Effect.Effect<void>
  /** Notes a pair handed on without a fetch: its settling is no token fetched again. */
  readonly handOn: (pair: Pair) => void
  /**
   * The warning step of a fetch's settling, at `now`: the failed refresh or the token's loss (`usable`, the token
   * usable when the fetch began), or the end of the failed refreshes warned of.
   */
  readonly settled: (exit: Exit.Exit<Pair, FinError>, usable: Option.Option<Access>, now: number) => Effect.Effect<void>
}

/** The warnings of a provider; `isRefused` says whether the service refused an access token (`invalidate`). */
export const make = (isRefused: (token: Redacted.Redacted<string>) => boolean): RefreshWarnings => {
  // Whether a failed refresh was warned of since the last token fetched: the next one fetched says the end of it.
  let refreshWarned = false
  // Whether the token's loss was warned of since then (or since a token was last gone on with): said once, by the
  // fetch that ended past its usable time or by the first to fail after it (the token most often runs out in the
  // pause between two failed refreshes).
  let lostWarned = false
  // Pairs handed on without a fetch (a stored pair gone on with after this process's refresh failed, or waited on):
  // their fetch's settling is no token fetched again.
  const handedOn = new WeakSet<Pair>()

  // Going on with a token (a stored pair handed on, after this process's own was lost, among them): its loss is to
  // be said again.
  // At Warning once an outage: its first failed refresh, the token's loss, and going on with a token after that
  // loss; the tries every 5 s in between, each going on with the same token, at Debug.
  const refreshWarning = (message: string, lost: boolean) => (reason: string) =>
    (lost || !refreshWarned || lostWarned ? Effect.logWarning : Effect.logDebug)(
      `effect-fin: the token refresh failed${message}`
    ).pipe(
      Effect.annotateLogs("error", reason),
      Effect.zipLeft(Effect.sync(() => {
        refreshWarned = true
        lostWarned = lost
      }))
    )
  const refreshFailed = refreshWarning("; going on with the current token", false)
  const tokenLost = refreshWarning(
    " and the current token is no longer usable; calls fail until a token is fetched",
    true
  )

  const settled = (exit: Exit.Exit<Pair, FinError>, usable: Option.Option<Access>, now: number) =>
    Effect.gen(function*() {
      // The token usable when the fetch began may have expired while it ran (a stalled token route, retried).
      if (Option.isSome(usable) && Exit.isFailure(exit)) {
        // Nor is one the service refused meanwhile (`invalidate`: an API call's 401): it is gone from the state.
        yield* now < usable.value.usableUntil && !isRefused(usable.value.token)
          ? refreshFailed(TokenEndpoint.failedBy(exit.cause))
          : tokenLost(TokenEndpoint.failedBy(exit.cause))
      } else if (refreshWarned && !lostWarned && Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)) {
        yield* tokenLost(TokenEndpoint.failedBy(exit.cause))
      } else if (refreshWarned && Exit.isSuccess(exit) && !handedOn.has(exit.value)) {
        refreshWarned = false
        lostWarned = false
        yield* Effect.logInfo("effect-fin: a token was fetched again after the failed refreshes warned of")
      }
    })

  return {
    refreshFailed,
    handOn: (pair) => {
      handedOn.add(pair)
    },
    settled
  }
}
