/**
 * Access tokens for the service's modified client-credential flow: issued with JSON credentials, cached, refreshed
 * `refreshMargin` before expiry (through the refresh token while it is valid), one request in flight however many
 * callers wait. Failures are not cached, but for the wait an answer asked for (its `Retry-After`, `maxRetryAfter` at
 * most) and refused credentials (a 401, or another 4xx but 408 and 429, on the issue route: held for at least a second
 * whatever `maxRetryAfter` says, longer when the refusal asked a longer `Retry-After`): until that has
 * passed, no token request is sent, and a caller without a usable token fails at once with it.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as SynchronizedRef from "effect/SynchronizedRef"
import * as FinConfig from "./FinConfig.js"
import type { FinError } from "./FinError.js"
import * as Closing from "./internal/closing.js"
import * as DeadlineAware from "./internal/deadlineAware.js"
import { detachedIfUninterruptible } from "./internal/detached.js"
import * as Http from "./internal/http.js"
import * as KeptAnswer from "./internal/keptAnswer.js"
import * as KnownTokens from "./internal/knownTokens.js"
import * as Monotonic from "./internal/monotonic.js"
import * as RefreshWarnings from "./internal/refreshWarnings.js"
import * as RetryWaits from "./internal/retryWaits.js"
import * as TimeLimits from "./internal/timeLimits.js"
import * as TokenEndpoint from "./internal/tokenEndpoint.js"
import * as TokenResponses from "./internal/tokenResponse.js"
import * as TokenSharing from "./internal/tokenSharing.js"
import * as TokenStoreGuard from "./internal/tokenStoreGuard.js"
import * as Wiped from "./internal/wiped.js"
import * as TokenStore from "./TokenStore.js"

/**
 * Access tokens: the current one (fetched when due), and the invalidation of one the service refused.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /**
   * A valid access token: the cached one, or one fetched now (a single fetch shared by all callers); while the wait
   * a failed fetch's answer asked for lasts, that answer at once, its `retryAfter` the wait that is left (refused
   * credentials that asked no wait: held for a second, and handed out as they came, with no `retryAfter`).
   */
  readonly get: Effect.Effect<Redacted.Redacted<string>, FinError>
  /**
   * Forgets `token` if it is still the cached one (compare-and-clear), so the next `get` fetches a new one, and never
   * hands it out again, unless the token endpoint answers a later fetch with that same token (then taken as good:
   * there is no other).
   */
  readonly invalidate: (token: Redacted.Redacted<string>) => Effect.Effect<void>
}

/**
 * The token provider of a client, provided by `layer` (or `FinClient.layer`); `layerStatic` for tests.
 *
 * @since 0.1.0
 * @category tags
 */
export class TokenProvider extends Context.Tag("effect-fin/TokenProvider")<TokenProvider, Service>() {}

/**
 * Parses the service's expiry timestamps (`2025-12-28 10:34:45+00`, not ISO 8601) and ISO 8601 date-times into
 * epoch milliseconds; `undefined` when the text is neither (a date alone, `2025-12-28`, included) or no text at all.
 * Without a zone, UTC.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parseTimestamp: (text: string) => number | undefined = TokenResponses.parseTimestamp

/**
 * The token response in either documented envelope (top level, or wrapped in `data`), decoded with the token
 * already `Redacted` and the timestamps as epoch milliseconds.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TokenResponse = TokenResponses.TokenResponse

type Access = TokenEndpoint.Access
type Refresh = TokenEndpoint.Refresh
type Pair = TokenEndpoint.Pair

interface State {
  readonly access: Option.Option<Access>
  readonly refresh: Option.Option<Refresh>
  readonly pending: Option.Option<Deferred.Deferred<Redacted.Redacted<string>, FinError>>
}

// How many refused access tokens a provider remembers.
const MAX_REFUSED = 16

/**
 * Builds the provider; its fetches run in the scope of the layer, so a caller who is interrupted does not fail the
 * others waiting for the same fetch. The pair is kept in the `TokenStore` in context (one in memory without it): a
 * shared store lets one process fetch for all, the others read what it stored.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Service, never, FinConfig.FinConfig | Http.Client | Scope.Scope> = Effect.gen(
  function*() {
    const config = yield* FinConfig.FinConfig
    const scope = yield* Effect.scope
    // A client kept past its scope (a `FinClient.make` value used after) gets no token, cached or not: its calls end
    // as an interruption and send nothing, as they would if the token had to be fetched (into the closed scope); its
    // calls in flight end so too (see `Closing`).
    const closing = Closing.make()
    // The store the layer was built with, else the one in the caller's context, else one in memory: a client given a
    // store of its own keeps it (its token never lands in the store another client's calls run under).
    const builtWith = yield* Effect.serviceOption(TokenStore.TokenStore)
    const memory = TokenStore.makeMemory()
    const guard = TokenStoreGuard.guardedStores(config.tokenTimeout)
    const { track, unavailable: storeUnavailable } = TokenStoreGuard.storeOutage()
    const storeFor = Option.isSome(builtWith)
      ? Effect.sync(() => track(guard(builtWith.value)))
      : Effect.map(
        Effect.serviceOption(TokenStore.TokenStore),
        (provided) => track(guard(Option.getOrElse(provided, () => memory)))
      )
    const key = yield* TokenStore.keyFor(config.baseUrl, config.clientId, config.clientSecret)
    const ref = yield* SynchronizedRef.make<State>({
      access: Option.none(),
      refresh: Option.none(),
      pending: Option.none()
    })
    // The tokens this provider got lately (fetched, or read from the store), redacted from every call's error: the
    // service's words about one call may quote another token of the session (its refresh token, the one replaced).
    const known = KnownTokens.make()
    // A pair due for a refresh but still usable that the fetch found in the store, this process having none of its
    // own (a new pod, say): a caller with a deadline goes on with it as with a token of its own (`awaitFetch`).
    let storedDue: Access | undefined
    const waits = RetryWaits.make()
    const endpoint = TokenEndpoint.make({ config, client: yield* Http.Client, known, waits })
    // The access tokens the service refused (`invalidate`), the latest few: never handed out again, nor taken back
    // from a store that failed to clear them (each stays there no longer than its lifetime; a token refused this many
    // refusals ago has long been replaced).
    const refusedAccess = new Set<string>()
    const isRefused = (token: Redacted.Redacted<string>) => refusedAccess.has(Redacted.value(token))
    const refuse = (token: Redacted.Redacted<string>) => {
      refusedAccess.add(Redacted.value(token))
      if (refusedAccess.size > MAX_REFUSED) refusedAccess.delete(refusedAccess.values().next().value!)
    }

    // The wait the last failed fetch's answer asked for, kept; the failures handed out as its answer.
    const answers = KeptAnswer.make(config.maxRetryAfter)
    // The refresh warnings, each said once an outage, and the pairs handed on without a fetch.
    const warnings = RefreshWarnings.make(isRefused)

    // A token the service hands out again is good again.
    const fetch = (previous: Option.Option<Refresh>, now: number): Effect.Effect<Pair, FinError> =>
      Effect.flatMap(Monotonic.millis, (monotonic) => {
        const kept = answers.keptAt(monotonic)
        return kept !== undefined
          ? Effect.fail(answers.quietFailure(kept, monotonic))
          : Effect.tap(
            Option.isSome(previous) && now < previous.value.usableUntil &&
              Redacted.value(previous.value.token) !== endpoint.refusedRefresh()
              ? endpoint.refresh(previous.value)
              : endpoint.issue,
            (pair) =>
              Effect.sync(() => {
                refusedAccess.delete(Redacted.value(pair.access.token))
                answers.end()
              })
          )
      })

    const pauseRefresh = (failedAt: number, pause = KeptAnswer.REFRESH_PAUSE_MILLIS) => (access: Access): Access => ({
      ...access,
      refreshAt: Math.max(access.refreshAt, Math.min(access.usableUntil, failedAt + pause))
    })

    // The rounds through a shared store: its pair read, or its lock taken and a fetch made under it; `obtain` rounds
    // until one yields a pair.
    const sharing = TokenSharing.make({
      config,
      key,
      known,
      endpoint,
      answers,
      isRefused,
      fetch,
      storeUnavailable,
      warnings,
      pauseRefresh,
      storeDue: (access) => {
        storedDue = access
      }
    })

    // The end of a fetch: its pair becomes the state, or, failing, the state keeps a usable token (for a pause before
    // the next try, rather than each caller waiting through a failing refresh); failures are not cached, but for the
    // wait an answer asked for (`quiet`). Then the waiters get the token or the error.
    const settle = (
      exit: Exit.Exit<Pair, FinError>,
      usable: Option.Option<Access>,
      deferred: Deferred.Deferred<Redacted.Redacted<string>, FinError>
    ) =>
      Effect.gen(function*() {
        waits.waiting = undefined
        storedDue = undefined
        const now = yield* Clock.currentTimeMillis
        const monotonic = yield* Monotonic.millis
        const pause = Exit.isFailure(exit) ? answers.quietAfter(exit.cause, monotonic) : KeptAnswer.REFRESH_PAUSE_MILLIS
        yield* SynchronizedRef.update(ref, (latest): State =>
          Exit.isSuccess(exit)
            ? {
              // Refused while the fetch ended (a stored pair handed on): not kept for the callers after these.
              access: Option.some(exit.value.access).pipe(Option.filter((access) => !isRefused(access.token))),
              refresh: exit.value.refresh,
              pending: Option.none()
            }
            : { ...latest, access: Option.map(latest.access, pauseRefresh(now, pause)), pending: Option.none() })
        // After the state's update, before the waiters are told, as the warnings always were.
        yield* warnings.settled(exit, usable, now)
        // While a wait is kept, a failure is handed out as its answer, the wait that is left as its `retryAfter`: its
        // first callers are told the wait kept (a `Retry-After` of two minutes is asked again after `maxRetryAfter`),
        // and callers that took another process's failure meanwhile are told this process's wait.
        const kept = answers.keptAt(monotonic)
        yield* Deferred.done(
          deferred,
          Exit.map(
            Exit.mapError(exit, (error) => kept !== undefined ? answers.quietFailure(kept, monotonic) : error),
            (pair) => pair.access.token
          )
        )
      })

    // The fetch's token, unless the service refused it as the fetch ended (`settle` keeps it out of the state, but the
    // waiters were promised the fetch's outcome): then the caller asks again, and the next fetch gets another.
    const awaitShared = (
      deferred: Deferred.Deferred<Redacted.Redacted<string>, FinError>,
      deadline: number | undefined
    ): Effect.Effect<Redacted.Redacted<string>, FinError> =>
      Effect.flatMap(
        awaitOutcome(deferred, deadline),
        (token) => isRefused(token) ? getLocked(deadline) : Effect.succeed(token)
      )

    // The fetch's outcome; or, for a caller with a deadline (an API call's, through `DeadlineAware`), the fetch's
    // error as soon as the fetch is to wait past that deadline before trying again: the caller would only be cut off.
    const awaitOutcome = (
      deferred: Deferred.Deferred<Redacted.Redacted<string>, FinError>,
      deadline: number | undefined
    ): Effect.Effect<Redacted.Redacted<string>, FinError> => {
      if (deadline === undefined) return Deferred.await(deferred)
      // Interruptible, so the loser ends even under a caller in an uninterruptible region (a finalizer).
      return Effect.raceFirst(
        Effect.interruptible(Deferred.await(deferred)),
        Effect.interruptible(RetryWaits.pastDeadline(waits, deadline))
      )
    }

    // A token due for a refresh is not handed out while the refresh runs (the service may revoke it on issuing the new
    // one, and calls sent with it late would meet 401s), but if the refresh fails, callers get it back while it is
    // still usable (until half the margin is left), rather than the refresh's error. Nor do they wait past that for a
    // refresh that hangs (its timeouts and retries can outlast the margin): then they go on with it too.
    const awaitFetch = (
      deferred: Deferred.Deferred<Redacted.Redacted<string>, FinError>,
      fallback: Option.Option<Access>,
      deadline: number | undefined
    ): Effect.Effect<Redacted.Redacted<string>, FinError> => {
      if (Option.isNone(fallback)) {
        return deadline === undefined ? awaitShared(deferred, deadline) : awaitStored(deferred, deadline)
      }
      const { token, usableUntil } = fallback.value
      // A caller with a deadline waits for the refresh half of what is left of it at most, then goes on with the token
      // in hand, leaving the other half to the call: a refresh that hangs (no answer, no retry wait to announce) must
      // not end it at its deadline, when one that fails fast lets it go on with that token.
      // Read when it would be handed out: the service may have refused it (`invalidate`) while the caller waited.
      return Effect.flatMap(Effect.zip(Clock.currentTimeMillis, Monotonic.millis), ([start, monotonic]) =>
        awaitShared(deferred, deadline).pipe(
          Effect.timeoutTo({
            duration: Duration.millis(Math.max(
              0,
              Math.min(usableUntil - start, deadline === undefined ? Infinity : (deadline - monotonic) / 2)
            )),
            onSuccess: Effect.succeed,
            onTimeout: () => isRefused(token) ? awaitShared(deferred, deadline) : Effect.succeed(token)
          }),
          Effect.flatten,
          // So that the time limit holds for a caller in a finalizer too.
          detachedIfUninterruptible,
          // A refresh that died (a platform client that threw) is a failed refresh too: the token in hand still
          // serves; only an interruption (the client shutting down) is passed on as it is.
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : Effect.flatMap(
              Clock.currentTimeMillis,
              (now) => now < usableUntil && !isRefused(token) ? Effect.succeed(token) : Effect.failCause(cause)
            )
          )
        ))
    }

    // A caller with no token of its own, and a deadline: after half of what is left of it, the pair the fetch found in
    // the store if that is still usable (`storedDue`), as its own token would be; else it waits on. As with its own
    // token too, the fetch's error (a retry wait past the deadline, announced while the fetch goes on) gives way to it.
    const awaitStored = (
      deferred: Deferred.Deferred<Redacted.Redacted<string>, FinError>,
      deadline: number
    ): Effect.Effect<Redacted.Redacted<string>, FinError> => {
      const stored = Effect.map(Clock.currentTimeMillis, (now) => {
        const due = storedDue
        return due !== undefined && now < due.usableUntil && !isRefused(due.token)
          ? Option.some(due.token)
          : Option.none()
      })
      return Effect.flatMap(Monotonic.millis, (monotonic) =>
        awaitShared(deferred, deadline).pipe(
          Effect.timeoutTo({
            duration: Duration.millis(Math.max(0, (deadline - monotonic) / 2)),
            onSuccess: Effect.succeed,
            onTimeout: () =>
              Effect.flatMap(
                stored,
                Option.match({ onNone: () => awaitShared(deferred, deadline), onSome: Effect.succeed })
              )
          }),
          Effect.flatten,
          detachedIfUninterruptible,
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : Effect.flatMap(
              stored,
              Option.match({ onNone: () => Effect.failCause(cause), onSome: Effect.succeed })
            )
          )
        ))
    }

    // The lock's whole step, the state's update included, is uninterruptible (its body only reads the clock and forks,
    // so the wait for the lock is short): a caller interrupted between the fork and the update (an interruption that
    // came during the body takes effect once it ends) would leave the fetch unrecorded, and the next caller would start
    // a second one. The fetch itself is interruptible (its timeouts and the scope's closing interrupt it), whatever its
    // first caller's state: one that asked from a finalizer must not leave every caller waiting on a fetch its timeouts
    // cannot stop.
    const getLocked = (deadline: number | undefined): Service["get"] => Effect.flatten(
      Effect.uninterruptible(SynchronizedRef.modifyEffect(ref, (state) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const usable = Option.filter(state.access, (access) => now < access.usableUntil)
          if (Option.isSome(usable) && now < usable.value.refreshAt) {
            return [Effect.succeed(usable.value.token), state] as const
          }
          if (Option.isSome(state.pending)) return [awaitFetch(state.pending.value, usable, deadline), state] as const
          const deferred = yield* Deferred.make<Redacted.Redacted<string>, FinError>()
          // The fiber ends with the fetch's exit as its value: `settle` passes a failure on to the waiters, so the
          // runtime does not also report it as a fiber that "terminated with an unhandled error".
          const fiber = yield* sharing.obtain(yield* storeFor, state.refresh, usable).pipe(
            Effect.onExit((exit) => settle(exit, usable, deferred)),
            Effect.interruptible,
            Effect.exit,
            Effect.forkIn(scope)
          )
          // Into a scope already closed (the client is shutting down) the fetch is interrupted before it starts and
          // `settle` never runs: the waiters get the interruption rather than waiting for ever. Otherwise `settle`
          // has completed the deferred before the fiber ends, and this does nothing.
          fiber.addObserver((exit) =>
            Deferred.unsafeDone(
              deferred,
              Exit.isSuccess(exit) ? Exit.map(exit.value, (pair) => pair.access.token) : Exit.failCause(exit.cause)
            )
          )
          return [
            awaitFetch(deferred, usable, deadline),
            { ...state, access: usable, pending: Option.some(deferred) }
          ] as const
        })
      ))
    )

    // A fresh cached token, or a fetch in flight, needs no lock (the lock serialises every caller, a thousand of them
    // waiting one after another for one fetch); anything else goes through it. A caller with a deadline waits (for
    // the lock, for a fetch) until then at most; a token at hand costs it no timer.
    const getBefore = (deadline: number | undefined, onDeadline?: () => FinError): Service["get"] => {
      const wait = (self: Service["get"]) =>
        deadline === undefined || onDeadline === undefined ? self : TimeLimits.timeoutAt(self, deadline, onDeadline)
      return Effect.flatMap(SynchronizedRef.get(ref), (state) => {
        if (closing.isClosed()) return Effect.interrupt
        if (Option.isSome(state.access)) {
          const access = state.access.value
          return Effect.flatMap(
            Clock.currentTimeMillis,
            (now) => now < access.refreshAt ? Effect.succeed(access.token) : wait(getLocked(deadline))
          )
        }
        return wait(
          Option.isSome(state.pending) ? awaitFetch(state.pending.value, Option.none(), deadline) : getLocked(deadline)
        )
      })
    }

    // This process first, in one step: from then on nobody here gets the token, nor takes it back from the store (even
    // one that fails to clear it). The store's clear may then be cut short (the caller's deadline) at no cost.
    const invalidate: Service["invalidate"] = (token) =>
      Effect.zipRight(
        SynchronizedRef.update(ref, (state) => {
          refuse(token)
          return Option.isSome(state.access) && Redacted.value(state.access.value.token) === Redacted.value(token)
            ? { ...state, access: Option.none() }
            : state
        }),
        Effect.catchAll(Effect.flatMap(storeFor, (store) => store.clear(key, token)), storeUnavailable)
      )

    // Added last, so run first: from the moment the scope begins to close.
    yield* Effect.addFinalizer(() => Effect.sync(closing.close))
    // An API call passes its deadline (`DeadlineAware`): its wait ends then, or at once with the fetch's error when a
    // shared fetch is to wait past it before trying again.
    return Closing.register(
      KnownTokens.register(
        DeadlineAware.register(TokenProvider.of({ get: getBefore(undefined), invalidate }), getBefore),
        known.all
      ),
      closing
    )
  }
)

/**
 * The provider of a client; requires its options and the platform `HttpClient`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<TokenProvider, never, FinConfig.FinConfig | Http.Client> = Layer.scoped(
  TokenProvider,
  make
)

/**
 * A provider that always returns `token` and never calls the service: for tests. Its build dies with
 * `IllegalArgumentException` when the token could not be sent as a bearer (empty, a blank, a control character), as a
 * token the service issued so would be refused.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerStatic = (token: string | Redacted.Redacted<string>): Layer.Layer<TokenProvider> =>
  Layer.sync(TokenProvider, () => {
    const redacted = Redacted.isRedacted(token) ? token as Redacted.Redacted<string> : Redacted.make(token)
    // A Redacted wiped holds no token: refused as one that cannot be sent, not with `Redacted.value`'s own Error.
    const value = Wiped.valueOf(redacted)
    if (typeof value !== "string" || !TokenResponses.BEARER.test(value)) {
      // Not quoted: it may be a real token.
      throw new Cause.IllegalArgumentException(
        "effect-fin: TokenProvider.layerStatic: the token is not one of 1 to 8192 visible ASCII characters (no spaces)"
      )
    }
    return TokenProvider.of({ get: Effect.succeed(redacted), invalidate: () => Effect.void })
  })

/**
 * A valid access token from the `TokenProvider` in context (see `Service.get`).
 *
 * @since 0.1.0
 * @category accessors
 */
export const get: Effect.Effect<Redacted.Redacted<string>, FinError, TokenProvider> = Effect.flatMap(
  TokenProvider,
  (provider) => provider.get
)

/**
 * Forgets `token` in the `TokenProvider` in context if it is still the cached one (see `Service.invalidate`).
 *
 * @since 0.1.0
 * @category accessors
 */
export const invalidate = (token: Redacted.Redacted<string>): Effect.Effect<void, never, TokenProvider> =>
  Effect.flatMap(TokenProvider, (provider) => provider.invalidate(token))
