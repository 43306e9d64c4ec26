/**
 * Where `TokenProvider` keeps the token pair it fetched, and the lock that lets one fetcher refresh it. The default
 * keeps both in memory (one process); `effect-fin/redis` shares them between processes, so many instances of a service
 * make one token request per expiry between them.
 *
 * A store's failures never become a `FinError`: `TokenProvider` logs a warning and fetches without sharing. An
 * operation that does not answer within `tokenTimeout`, dies or interrupts itself, counts as failed too.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as FinConfig from "./FinConfig.js"
import * as BaseUrl from "./internal/baseUrl.js"
import * as BoundedStore from "./internal/boundedStore.js"
import * as Digest from "./internal/digest.js"
import * as Durations from "./internal/duration.js"
import * as Inspect from "./internal/inspect.js"
import * as Monotonic from "./internal/monotonic.js"
import * as OptionNames from "./internal/optionNames.js"

/**
 * A token pair as stored: absolute times in epoch milliseconds, so every process that reads it refreshes at the same
 * moment.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tokens {
  /** The bearer token API calls send. */
  readonly accessToken: Redacted.Redacted<string>
  /** When the access token is due for a refresh (`refreshMargin` before it expires). */
  readonly refreshAt: number
  /**
   * Until when the access token may still be used if its refresh fails (half the margin before it expires);
   * `refreshAt` when absent.
   */
  readonly accessUsableUntil?: number | undefined
  /** The token that fetches the next pair without the client secret; absent when the service gave none. */
  readonly refreshToken?: Redacted.Redacted<string> | undefined
  /** Until when the refresh token may be used (with the same margin); set with `refreshToken`. */
  readonly refreshUsableUntil?: number | undefined
}

/**
 * A store could not be read or written (unreachable, timed out, refused). `TokenProvider` recovers from it by
 * fetching without sharing; it is never part of `FinError`.
 *
 * @since 0.1.0
 * @category errors
 */
export class TokenStoreError extends Schema.TaggedError<TokenStoreError>("effect-fin.TokenStoreError")(
  "TokenStoreError",
  {
    /**
     * What the store was doing: one of `Service`'s operations (`get`, `set`, `clear`, `lock`, `renew`, `unlock`,
     * `failure`), or `configure` (a Redis store's options, when it is made).
     */
    operation: Schema.String,
    /** What went wrong (unreachable, no answer in time, a refused option), for a log line. */
    message: Schema.String
  }
) {}

Inspect.showUnwrapped(TokenStoreError)

/**
 * The answer to a lock request: taken (by `owner`, to pass to `set`, `renew` and `unlock`), or held by `owner`.
 *
 * @since 0.1.0
 * @category models
 */
export type Lock =
  | { readonly _tag: "Acquired"; readonly owner: string }
  | { readonly _tag: "Held"; readonly owner: string }

/**
 * How the last fetch under the lock failed: its owner, and the error encoded by `TokenProvider`. Processes that were
 * waiting for that owner fail with it instead of each running a fetch of their own that would fail the same way.
 *
 * @since 0.1.0
 * @category models
 */
export interface Failure {
  /** The lock owner whose fetch failed, as `lock` named it. */
  readonly owner: string
  /** The failure as `TokenProvider` recorded it (opaque text for the store: kept and handed back as is). */
  readonly error: string
}

/**
 * A token store. Every operation takes the key `TokenProvider` derives from the base URL and the credentials
 * (`keyFor`), so one store can serve several clients.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** The stored pair, if any (expired or not: the caller decides). */
  readonly get: (key: string) => Effect.Effect<Option.Option<Tokens>, TokenStoreError>
  /** Replaces the stored pair if `owner` still holds the lock; `false` (nothing written) once it lost it. */
  readonly set: (key: string, tokens: Tokens, owner: string) => Effect.Effect<boolean, TokenStoreError>
  /** Removes the stored pair only if its access token is still `accessToken` (compare-and-delete). */
  readonly clear: (key: string, accessToken: Redacted.Redacted<string>) => Effect.Effect<void, TokenStoreError>
  /** Takes the refresh lock of `key` for `lockTtl`, or says who holds it. */
  readonly lock: (key: string) => Effect.Effect<Lock, TokenStoreError>
  /** Extends the lock by `lockTtl` if `owner` still holds it; `false` once it lost it. */
  readonly renew: (key: string, owner: string) => Effect.Effect<boolean, TokenStoreError>
  /**
   * Releases the lock if `owner` still holds it (a lock that expired and was taken over stays with its new owner),
   * recording `failure` (for `lockTtl`) when the owner's fetch failed.
   */
  readonly unlock: (key: string, owner: string, failure?: string | undefined) => Effect.Effect<void, TokenStoreError>
  /** The failure recorded by the last owner that failed, while it is recorded. */
  readonly failure: (key: string) => Effect.Effect<Option.Option<Failure>, TokenStoreError>
  /**
   * How long a lock lives unless renewed: its owner renews it while fetching, so only a dead owner's lock expires.
   * Finite, above zero, at most 24 days (the provider dies with `IllegalArgumentException` on another).
   */
  readonly lockTtl: Duration.Duration
  /** How long a caller that did not get the lock waits before looking at the store again (as `lockTtl`, checked). */
  readonly waitInterval: Duration.Duration
}

/**
 * Where token pairs are shared between clients: optional; in memory by default, Redis from `effect-fin/redis`.
 *
 * @since 0.1.0
 * @category tags
 */
export class TokenStore extends Context.Tag("effect-fin/TokenStore")<TokenStore, Service>() {}

/**
 * The store key of a client: its base URL as the client reads it (`https://GW.example.com:443/payments/` gives the key
 * of `https://gw.example.com/payments`: the URL as configured names the pair the client stores), a SHA-256 of its
 * client id (the id itself is not written anywhere) and an HMAC-SHA256 of the client id under the client secret (its
 * first 16 bytes, in hex; it cannot give the secret back).
 * Only clients holding the same credentials share a key: one given another account's client id (which is no secret)
 * and any other secret never gets that account's stored pair, nor refreshes it with the stored refresh token. During a
 * secret rotation, instances on the old and on the new secret each keep a pair.
 *
 * @since 0.1.0
 * @category constructors
 */
export const keyFor = (
  baseUrl: string,
  clientId: string,
  clientSecret: Redacted.Redacted<string>
): Effect.Effect<string> =>
  Effect.suspend(() => {
    const utf8 = new TextEncoder()
    // One a client would refuse names no client's pair: kept as given.
    const url = Either.getOrElse(BaseUrl.parse(baseUrl), () => baseUrl)
    return Effect.zipWith(
      Digest.sha256(utf8.encode(clientId)),
      Digest.hmacSha256(utf8.encode(Redacted.value(clientSecret)), utf8.encode(`effect-fin token store|${clientId}`)),
      (id, mac) => `${url}|${Encoding.encodeHex(id)}|${Encoding.encodeHex(mac.subarray(0, 16))}`
    )
  })

/**
 * A store in memory: for one process, where `TokenProvider`'s own single flight already makes one fetch at a time.
 * Its lock is real (with an expiry, on monotonic time: a wall clock stepped forward must not free a held lock), so
 * clients sharing one store in a process also fetch one at a time. A pair neither of whose tokens is of use any more is
 * dropped as the store grows, as the Redis store lets it expire (a store shared by many accounts keeps the live ones).
 * Throws `IllegalArgumentException` when `lockTtl` is not a finite duration above zero and at most 24 days, or an
 * option is none (`lockttl`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (options: { readonly lockTtl?: FinConfig.DurationOption | undefined } = {}): Service => {
  OptionNames.checkOrThrow("TokenStore.makeMemory", options, { lockTtl: true }, {
    object: "({ lockTtl })",
    option: "(lockTtl)"
  })
  // At most 24 days, as the Redis store's: the provider renews a lock every third of it; a longer timer never fires.
  const lockTtl = Durations.checkOrThrow(
    options.lockTtl ?? Duration.seconds(10),
    false,
    "effect-fin: TokenStore.makeMemory: lockTtl",
    true
  )
  const pairs = new Map<string, Tokens>()
  const locks = new Map<string, { readonly owner: string; readonly until: number }>()
  const failures = new Map<string, Failure & { readonly until: number }>()
  let owners = 0
  // As the Redis store's PEXPIRE: a pair is kept while either token is of use, then dropped (a store shared by many
  // accounts, or by secrets rotated away, must not keep every dead pair). Swept when the map has doubled since.
  const usefulUntil = (t: Tokens) => Math.max(t.refreshAt, t.accessUsableUntil ?? 0, t.refreshUsableUntil ?? 0)
  let sweepAt = 64
  // Not the pair just written, which its writer may read back (the Redis store keeps one at least a second).
  const sweep = (wall: number, written: string) => {
    if (pairs.size < sweepAt) return
    for (const [key, tokens] of pairs) if (key !== written && usefulUntil(tokens) <= wall) pairs.delete(key)
    sweepAt = Math.max(64, pairs.size * 2)
  }
  // Failure records and locks expire on their own (as Redis's PX does): swept by their own count, since keys whose
  // fetch always fails (refused credentials) record failures without ever storing a pair.
  let sweepExpiringAt = 64
  const sweepExpiring = (monotonic: number) => {
    if (failures.size + locks.size < sweepExpiringAt) return
    for (const [key, failure] of failures) if (failure.until <= monotonic) failures.delete(key)
    for (const [key, held] of locks) if (held.until <= monotonic) locks.delete(key)
    sweepExpiringAt = Math.max(64, (failures.size + locks.size) * 2)
  }
  const holder = (key: string, now: number) => {
    const held = locks.get(key)
    return held !== undefined && held.until > now ? held.owner : undefined
  }
  const ifOwner = <A>(key: string, owner: string, f: (now: number) => A, otherwise: A) =>
    Effect.map(Monotonic.millis, (now) => holder(key, now) === owner ? f(now) : otherwise)
  return BoundedStore.bounded({
    get: (key) => Effect.sync(() => Option.fromNullable(pairs.get(key))),
    set: (key, tokens, owner) =>
      Effect.flatMap(Clock.currentTimeMillis, (wall) =>
        ifOwner(key, owner, () => (pairs.set(key, tokens), sweep(wall, key), true), false)),
    clear: (key, accessToken) =>
      Effect.sync(() => {
        const stored = pairs.get(key)
        if (stored !== undefined && Redacted.value(stored.accessToken) === Redacted.value(accessToken)) pairs.delete(key)
      }),
    lock: (key) =>
      Effect.map(Monotonic.millis, (now): Lock => {
        const held = holder(key, now)
        if (held !== undefined) return { _tag: "Held", owner: held }
        sweepExpiring(now)
        const owner = String(++owners)
        locks.set(key, { owner, until: now + Duration.toMillis(lockTtl) })
        return { _tag: "Acquired", owner }
      }),
    renew: (key, owner) =>
      ifOwner(key, owner, (now) => (locks.set(key, { owner, until: now + Duration.toMillis(lockTtl) }), true), false),
    unlock: (key, owner, failure) =>
      ifOwner(key, owner, (now) => {
        locks.delete(key)
        if (failure !== undefined) failures.set(key, { owner, error: failure, until: now + Duration.toMillis(lockTtl) })
      }, undefined),
    failure: (key) =>
      Effect.map(Monotonic.millis, (now) =>
        Option.map(
          Option.filter(Option.fromNullable(failures.get(key)), (f) => f.until > now),
          ({ error, owner }): Failure => ({ owner, error })
        )),
    lockTtl,
    waitInterval: Duration.millis(10)
  })
}

/**
 * Provides an in-memory store (one per layer build). `TokenProvider` uses one of its own when no `TokenStore` is
 * provided.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = (options: { readonly lockTtl?: FinConfig.DurationOption | undefined } = {}): Layer.Layer<TokenStore> =>
  Layer.sync(TokenStore, () => makeMemory(options))
