/**
 * The token provider's coordination through a shared `TokenStore`: the stored pair read and checked, the lock taken and
 * renewed while this process fetches under it, a failure recorded for the processes that waited on it, and a lock one
 * owner holds for longer than any fetch can take told as the store's failure; and the rounds until one yields a pair
 * (`obtain`), a stored pair still usable gone on with when this process's own fetch fails or hangs.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as FinConfig from "../FinConfig.js"
import { type FinError, FinError as FinErrorSchema } from "../FinError.js"
import * as TokenStore from "../TokenStore.js"
import type * as KeptAnswer from "./keptAnswer.js"
import * as KnownTokens from "./knownTokens.js"
import * as Monotonic from "./monotonic.js"
import type * as RefreshWarnings from "./refreshWarnings.js"
import * as Retry from "./retry.js"
import * as TokenEndpoint from "./tokenEndpoint.js"
import * as TokenResponses from "./tokenResponse.js"

type Access = TokenEndpoint.Access
type Pair = TokenEndpoint.Pair
type Refresh = TokenEndpoint.Refresh

const toTokens = (pair: Pair): TokenStore.Tokens => ({
  accessToken: pair.access.token,
  refreshAt: pair.access.refreshAt,
  accessUsableUntil: pair.access.usableUntil,
  ...(Option.isSome(pair.refresh)
    ? { refreshToken: pair.refresh.value.token, refreshUsableUntil: pair.refresh.value.usableUntil }
    : {})
})

/** A stored pair as the provider holds it. */
export const fromTokens = (tokens: TokenStore.Tokens): Pair => ({
  access: {
    token: tokens.accessToken,
    refreshAt: tokens.refreshAt,
    usableUntil: Math.max(tokens.refreshAt, tokens.accessUsableUntil ?? tokens.refreshAt)
  },
  refresh: tokens.refreshToken !== undefined && tokens.refreshUsableUntil !== undefined
    ? Option.some({ token: tokens.refreshToken, usableUntil: tokens.refreshUsableUntil })
    : Option.none()
})

// A fetch's failure as recorded in the store for the processes waiting on it (FinErrors hold nothing secret); only
// clients with the same credentials share a store key (`TokenStore.keyFor`), so only they read it.
// `kept`: the error is a kept answer handed out (no request was sent), not a new answer of the service.
// `left`: for a kept answer that carries no wait of its own (refused credentials), the milliseconds of the hold left.
const FailureJson = Schema.parseJson(
  Schema.Struct({ error: FinErrorSchema, kept: Schema.optional(Schema.Boolean), left: Schema.optional(Schema.Finite) })
)
// An error that cannot be recorded is not shared (the others fetch themselves), never a defect of this call.
const encodeFailure = Schema.encodeOption(FailureJson)
const decodeFailure = Schema.decodeUnknownOption(FailureJson)

/** What the coordination needs of its provider. */
export interface Deps {
  readonly config: FinConfig.Resolved
  /** The store key of the provider's credentials (`TokenStore.keyFor`). */
  readonly key: string
  readonly known: KnownTokens.Known
  readonly endpoint: TokenEndpoint.Endpoint
  readonly answers: KeptAnswer.KeptAnswer
  /** Whether the service refused the access token (`invalidate`). */
  readonly isRefused: (token: Redacted.Redacted<string>) => boolean
  /** The provider's own fetch: a refresh with `previous` if still usable at `now`, else an issue. */
  readonly fetch: (previous: Option.Option<Refresh>, now: number) => Effect.Effect<Pair, FinError>
  /** Says the store is unavailable (once an outage); the provider goes on without it. */
  readonly storeUnavailable: (error: TokenStore.TokenStoreError) => Effect.Effect<void>
  /** The refresh warnings: a stored pair gone on with is said as a failed refresh, and is no token fetched. */
  readonly warnings: RefreshWarnings.RefreshWarnings
  /** The token, its next refresh paused after a failure at `failedAt` (`pause`, else the usual 5 s). */
  readonly pauseRefresh: (failedAt: number, pause?: number) => (access: Access) => Access
  /** Makes known to the callers waiting the stored pair due for a refresh but still usable (undefined: none). */
  readonly storeDue: (access: Access | undefined) => void
}

/** A provider's rounds through its stores. */
export interface Sharing {
  /**
   * Rounds until one yields a pair: a lock holder that dies leaves a lock that expires, and a later round takes it.
   * A failing store is bypassed: this process fetches for itself. A process with no usable token of its own (`own`:
   * see the provider's `awaitFetch`) is served as if it had the stored one, when that is due for a refresh but still
   * usable: when the fetch fails, when its own fetch (under the lock, or without it when the store fails) hangs until
   * the token's usable time ends (the fetch is then given up, and the lock with it), and when waiting on another
   * process's fetch would outlast it.
   */
  readonly obtain: (
    store: TokenStore.Service,
    local: Option.Option<Refresh>,
    own: Option.Option<Access>
  ) => Effect.Effect<Pair, FinError>
}

/** The coordination of a provider built with `deps`. */
export const make = (
  { answers, config, endpoint, fetch, isRefused, key, known, pauseRefresh, storeDue, storeUnavailable, warnings }: Deps
): Sharing => {
  // A stored pair whose access token cannot be sent as a bearer token (another writer's, a damaged value) is none:
  // handed out, it would fail every call until its refresh time, never with the 401 that clears a refused one. Said
  // once per such token.
  let ignoredStored: string | undefined
  const readStored = (store: TokenStore.Service) =>
    Effect.flatMap(store.get(key), (stored) => {
      const token = Option.isSome(stored) ? Redacted.value(stored.value.accessToken) : undefined
      if (Option.isSome(stored)) KnownTokens.knowPair(known, stored.value.accessToken, stored.value.refreshToken)
      if (token === undefined || TokenResponses.BEARER.test(token)) return Effect.succeed(stored)
      const said = ignoredStored === token
      ignoredStored = token
      return Effect.as(
        said
          ? Effect.void
          : Effect.logWarning("effect-fin: the token store holds an access token that cannot be sent; ignoring it"),
        Option.none()
      )
    })

  const usable = (stored: Option.Option<TokenStore.Tokens>, now: number) =>
    Option.filter(stored, (tokens) => now < tokens.refreshAt && !isRefused(tokens.accessToken))

  // While this process fetches under the lock, the lock is renewed, so it expires only if the process dies. Renewal
  // stops once the lock is lost, not on a failed renewal: a store that failed once may answer the next time, before
  // the lock expires (and another process fetches too).
  const holding = (store: TokenStore.Service, owner: string) => <A, E>(self: Effect.Effect<A, E>) => {
    const renew = Effect.sleep(Duration.divide(store.lockTtl, 3).pipe(Option.getOrElse(() => store.lockTtl))).pipe(
      Effect.zipRight(Effect.either(store.renew(key, owner))),
      Effect.repeat({ while: (renewed) => Either.isLeft(renewed) || renewed.right })
    )
    return Effect.scoped(Effect.zipRight(Effect.forkScoped(renew), self))
  }

  // The fetch this process makes under the lock. A failure is recorded for the processes that waited for this
  // owner: they fail with it rather than each running the same failing fetch in turn.
  const fetchHolding = (
    store: TokenStore.Service,
    owner: string,
    local: Option.Option<Refresh>,
    waitedFor: ReadonlySet<string>
  ): Effect.Effect<Pair, FinError | TokenStore.TokenStoreError> => {
    let failure: string | undefined
    return Effect.gen(function*() {
      // Another process may have stored a pair, or failed, between our last look and the lock.
      const stored = yield* readStored(store)
      const now = yield* Clock.currentTimeMillis
      const fresh = usable(stored, now)
      if (Option.isSome(fresh)) return fromTokens(fresh.value)
      const failed = yield* sharedFailure(store, waitedFor)
      if (Option.isSome(failed)) return yield* failed.value
      // The stored pair is the newest: its refresh token if it has a usable one, and ours only when nothing is
      // stored (ours may be one the service refused since, which its refuser took out of the stored pair).
      const refresh = Option.isSome(stored)
        ? Option.filter(fromTokens(stored.value).refresh, (r) => now < r.usableUntil)
        : local
      const pair = yield* fetch(refresh, now).pipe(
        Effect.tapError((error) =>
          Effect.map(Monotonic.millis, (monotonic) => {
            const kept = answers.isHandedOut(error)
            const held = kept && Retry.retryAfterOf(error) === undefined ? answers.keptAt(monotonic) : undefined
            const left = held === undefined
              ? {}
              : { left: Duration.toMillis(Monotonic.between(monotonic, held.until)) }
            failure = Option.getOrUndefined(encodeFailure({ error, kept, ...left }))
          })
        ),
        Effect.tapError(() => forgetRefusedRefresh(store, owner, stored)),
        holding(store, owner)
      )
      const shared = yield* Effect.catchAll(
        store.set(key, toTokens(pair), owner),
        (e) => Effect.as(storeUnavailable(e), true)
      )
      // A warning: other processes may be fetching too (with revokeOnIssue, revoking each other's tokens).
      if (!shared) {
        yield* Effect.logWarning(
          "effect-fin: lost the token store's lock while fetching (its renewals failed for lockTtl, or the store " +
            "lost the key: eviction, a restart, a flush); the new pair is not shared"
        )
      }
      return pair
    }).pipe(
      Effect.ensuring(Effect.suspend(() => Effect.catchAll(store.unlock(key, owner, failure), storeUnavailable)))
    )
  }

  // When the service refused the stored refresh token and the issue after it failed too, no new pair replaces the
  // stored one: its refresh token is taken out, or every other process would spend a call on it.
  const forgetRefusedRefresh = (
    store: TokenStore.Service,
    owner: string,
    stored: Option.Option<TokenStore.Tokens>
  ) => {
    const refused = Option.filter(
      stored,
      (tokens) => tokens.refreshToken !== undefined && Redacted.value(tokens.refreshToken) === endpoint.refusedRefresh()
    )
    return Option.match(refused, {
      onNone: () => Effect.void,
      onSome: (tokens) =>
        store.set(key, { ...tokens, refreshToken: undefined, refreshUsableUntil: undefined }, owner).pipe(
          Effect.asVoid,
          Effect.catchAll(storeUnavailable)
        )
    })
  }

  const sharedFailure = (store: TokenStore.Service, waitedFor: ReadonlySet<string>) =>
    Effect.map(
      store.failure(key),
      Option.flatMap((f) =>
        waitedFor.has(f.owner)
          ? Option.flatMap(decodeFailure(f.error), (recorded) => {
            if (recorded.kept === true) {
              answers.recordCopy(
                recorded.error,
                recorded.left === undefined ? undefined : Duration.millis(Math.max(0, recorded.left))
              )
            }
            return Option.some(recorded.error)
          })
          : Option.none()
      )
    )

  // The longest another process's fetch under the lock can take, were its settings ours: a refresh and an issue,
  // each with every attempt timed out and every retry waiting the longest allowed (a `Retry-After` up to
  // `maxRetryAfter`, or the backoff's 8 s). A lock one owner holds for longer (and its `lockTtl` more) is one the
  // store never expires (a store of one's own that breaks the contract): waiting on it would end every call at its
  // deadline, for good.
  const longestFetch = Duration.times(
    Duration.sum(
      Duration.times(config.tokenTimeout, config.maxRetries + 1),
      Duration.times(Duration.max(config.maxRetryAfter, Retry.BACKOFF_CAP), config.maxRetries)
    ),
    2
  )
  // The owner last found holding each store's lock, and since when (monotonic): kept from one fetch to the next, so
  // that a lock the store never expires is waited on once, not again (as long, every call failing) at each refresh;
  // forgotten once a round finds a pair or takes the lock (a store may name an owner again for a later lock).
  const heldSince = new WeakMap<TokenStore.Service, { readonly owner: string; readonly since: number }>()

  // One round: the stored pair if it is still good; else the lock and a fetch under it (`bound`ed); else (someone
  // holds the lock) the failure of an owner this process was waiting for, or None: look again later; a failure of
  // the store once one owner has held it longer than a fetch can take (`longestFetch`, and its `lockTtl`).
  // `seen.stored` is the pair the round read.
  const round = (
    store: TokenStore.Service,
    local: Option.Option<Refresh>,
    waitedFor: Set<string>,
    seen: { stored: Option.Option<TokenStore.Tokens> },
    bound: <E>(fetching: Effect.Effect<Pair, E>) => Effect.Effect<Pair, E>
  ): Effect.Effect<Option.Option<Pair>, FinError | TokenStore.TokenStoreError> =>
    Effect.gen(function*() {
      seen.stored = yield* readStored(store)
      const stored = usable(seen.stored, yield* Clock.currentTimeMillis)
      if (Option.isSome(stored)) {
        heldSince.delete(store)
        return Option.some(fromTokens(stored.value))
      }
      const failed = yield* sharedFailure(store, waitedFor)
      if (Option.isSome(failed)) return yield* failed.value
      // Taken and used without a gap an interruption could fall into: the lock is always released. An interruption
      // that waited for the lock's answer (a scope closed during the round trip) comes in before the fetch's own
      // release is in place, so it is released here too (by owner: a no-op when the fetch released it already).
      return yield* Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(Effect.zip(store.lock(key), Monotonic.millis), ([lock, now]) => {
          if (lock._tag === "Held") {
            waitedFor.add(lock.owner)
            const last = heldSince.get(store)
            const since = last !== undefined && last.owner === lock.owner ? last.since : now
            if (last?.owner !== lock.owner) heldSince.set(store, { owner: lock.owner, since })
            const limit = Duration.sum(longestFetch, store.lockTtl)
            return now - since <= Duration.toMillis(limit)
              ? Effect.succeed(Option.none())
              : Effect.fail(
                new TokenStore.TokenStoreError({
                  operation: "lock",
                  message: `one owner has held the lock for over ${
                    Duration.format(limit)
                  }, longer than a fetch can take: the store does not expire its locks`
                })
              )
          }
          heldSince.delete(store)
          return Effect.asSome(restore(bound(fetchHolding(store, lock.owner, local, waitedFor)))).pipe(
            Effect.onInterrupt(() => Effect.catchAll(store.unlock(key, lock.owner), storeUnavailable))
          )
        })
      )
    })

  // See `Sharing.obtain`.
  const obtain = (
    store: TokenStore.Service,
    local: Option.Option<Refresh>,
    own: Option.Option<Access>
  ): Effect.Effect<Pair, FinError> => {
    const waitedFor = new Set<string>()
    const seen = { stored: Option.none<TokenStore.Tokens>() }
    const stillUsable = (now: number) =>
      Option.filter(
        Option.map(seen.stored, fromTokens),
        (pair) => Option.isNone(own) && now < pair.access.usableUntil && !isRefused(pair.access.token)
      )
    // The stored pair, handed out as a process's own token would be after a failed refresh: paused before the next
    // try.
    const goOnWith = (pair: Pair, now: number, pause?: number): Pair => {
      const handed = { ...pair, access: pauseRefresh(now, pause)(pair.access) }
      // No token fetched: not the end of the warnings (see `RefreshWarnings`).
      warnings.handOn(handed)
      return handed
    }
    const waitMillis = Duration.toMillis(store.waitInterval)
    // The stored pair, if still usable, made known to the callers waiting (see `storeDue`).
    const publish = (now: number) => {
      const pair = stillUsable(now)
      storeDue(Option.isSome(pair) ? pair.value.access : undefined)
      return pair
    }
    // Given up in the background (`disconnect`): its lock's release may take up to the store's timeout.
    const bound = <E>(fetching: Effect.Effect<Pair, E>): Effect.Effect<Pair, E> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Option.match(publish(now), {
          onNone: () => fetching,
          onSome: (pair) =>
            Effect.flatten(Effect.timeoutTo(Effect.disconnect(fetching), {
              duration: Duration.millis(pair.access.usableUntil - now),
              onSuccess: Effect.succeed,
              onTimeout: () =>
                Effect.flatMap(
                  Clock.currentTimeMillis,
                  (at) => Effect.as(warnings.refreshFailed("TimeoutError"), goOnWith(pair, at))
                )
            }))
        }))
    const loop: Effect.Effect<Pair, FinError | TokenStore.TokenStoreError> = Effect.flatMap(
      round(store, local, waitedFor, seen, bound),
      Option.match({
        onNone: () =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Option.match(Option.filter(publish(now), (pair) => now + waitMillis >= pair.access.usableUntil), {
              onNone: () => Effect.zipRight(Effect.sleep(store.waitInterval), Effect.suspend(() => loop)),
              onSome: (pair) => Effect.succeed(goOnWith(pair, now))
            })),
        onSome: Effect.succeed
      })
    )
    return Effect.catchTag(loop, "TokenStoreError", (error) =>
      storeUnavailable(error).pipe(
        Effect.zipRight(Clock.currentTimeMillis),
        Effect.flatMap((now) => bound(fetch(local, now)))
      )).pipe(
        // A fetch that died (a platform client that threw) is a failed fetch too, as for a process's own token
        // (`awaitFetch`); only an interruption (the client shutting down) is passed on as it is.
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Option.match(stillUsable(now), {
              onNone: () => Effect.failCause(cause),
              // The fetch's wait (`quiet`) is kept, and paused for, as when the process's own token serves on.
              onSome: (pair) =>
                Effect.flatMap(Monotonic.millis, (monotonic) =>
                  warnings.refreshFailed(TokenEndpoint.failedBy(cause)).pipe(
                    Effect.as(goOnWith(pair, now, answers.quietAfter(cause, monotonic)))
                  ))
            }))
        )
      )
  }

  return { obtain }
}
