/**
 * Where `TokenProvider` keeps the token pair it fetched, and the lock that lets one fetcher refresh it. The default
 * keeps both in memory (one process); `effect-fin/redis` shares them between processes, so many instances of a service
 * make one token request per expiry between them.
 *
 * A store's failures never become a `FinError`: `TokenProvider` logs a warning and fetches without sharing.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"

/**
 * A token pair as stored: absolute times in epoch milliseconds, so every process that reads it refreshes at the same
 * moment.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tokens {
  readonly accessToken: Redacted.Redacted<string>
  /** When the access token is due for a refresh (`refreshMargin` before it expires). */
  readonly refreshAt: number
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
export class TokenStoreError extends Schema.TaggedError<TokenStoreError>("effect-fin/TokenStoreError")(
  "TokenStoreError",
  {
    /** What the store was doing: `get`, `set`, `clear`, `lock`, `unlock`, `configure`. */
    operation: Schema.String,
    message: Schema.String
  }
) {}

/**
 * A token store. Every operation takes the key `TokenProvider` derives from the base URL and the client id
 * (`keyFor`), so one store can serve several clients.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** The stored pair, if any (expired or not: the caller decides). */
  readonly get: (key: string) => Effect.Effect<Option.Option<Tokens>, TokenStoreError>
  /** Replaces the stored pair. */
  readonly set: (key: string, tokens: Tokens) => Effect.Effect<void, TokenStoreError>
  /** Removes the stored pair only if its access token is still `accessToken` (compare-and-delete). */
  readonly clear: (key: string, accessToken: Redacted.Redacted<string>) => Effect.Effect<void, TokenStoreError>
  /** Takes the refresh lock of `key`; `Some(owner)` to pass to `unlock`, `None` while someone else holds it. */
  readonly lock: (key: string) => Effect.Effect<Option.Option<string>, TokenStoreError>
  /** Releases the lock if `owner` still holds it (a lock that expired and was taken over stays with its new owner). */
  readonly unlock: (key: string, owner: string) => Effect.Effect<void, TokenStoreError>
  /** How long a caller that did not get the lock waits before looking at the store again. */
  readonly waitInterval: Duration.Duration
}

/**
 * @since 0.1.0
 * @category tags
 */
export class TokenStore extends Context.Tag("effect-fin/TokenStore")<TokenStore, Service>() {}

/**
 * The store key of a client: its base URL and a SHA-256 of its client id (the id itself is not written anywhere).
 *
 * @since 0.1.0
 * @category constructors
 */
export const keyFor = (baseUrl: string, clientId: string): Effect.Effect<string> =>
  Effect.map(
    Effect.promise(() => globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(clientId))),
    (digest) => `${baseUrl}|${Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("")}`
  )

/**
 * A store in memory: for one process, where `TokenProvider`'s own single flight already makes one fetch at a time.
 * Its lock is real (with an expiry), so clients sharing one store in a process also fetch one at a time.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (options: { readonly lockTtl?: Duration.DurationInput | undefined } = {}): Service => {
  const lockTtl = Duration.toMillis(options.lockTtl ?? Duration.seconds(30))
  const pairs = new Map<string, Tokens>()
  const locks = new Map<string, { readonly owner: string; readonly until: number }>()
  let owners = 0
  return {
    get: (key) => Effect.sync(() => Option.fromNullable(pairs.get(key))),
    set: (key, tokens) => Effect.sync(() => void pairs.set(key, tokens)),
    clear: (key, accessToken) =>
      Effect.sync(() => {
        const stored = pairs.get(key)
        if (stored !== undefined && Redacted.value(stored.accessToken) === Redacted.value(accessToken)) pairs.delete(key)
      }),
    lock: (key) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const held = locks.get(key)
        if (held !== undefined && held.until > now) return Option.none()
        const owner = String(++owners)
        locks.set(key, { owner, until: now + lockTtl })
        return Option.some(owner)
      }),
    unlock: (key, owner) =>
      Effect.sync(() => {
        if (locks.get(key)?.owner === owner) locks.delete(key)
      }),
    waitInterval: Duration.millis(10)
  }
}

/**
 * Provides an in-memory store (one per layer build). `TokenProvider` uses one of its own when no `TokenStore` is
 * provided.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = (options: { readonly lockTtl?: Duration.DurationInput | undefined } = {}): Layer.Layer<TokenStore> =>
  Layer.sync(TokenStore, () => makeMemory(options))
