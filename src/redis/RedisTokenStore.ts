/**
 * A `TokenStore` in Redis: every process of a service shares one token pair, and one of them refreshes it per expiry
 * while the others wait for it, under a lock (`SET NX PX`) that only its owner releases and that expires if its owner
 * dies. Optionally encrypted at rest (AES-GCM through WebCrypto, bound to its key name).
 *
 * When Redis fails, `TokenProvider` logs a warning and fetches for its own process: calls go on, unshared.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as TokenStore from "../TokenStore.js"
import * as Connection from "./internal/connection.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface Options extends Connection.Options {
  /**
   * Encrypts the stored pair with AES-GCM: 16, 24 or 32 bytes, raw or base64. Every process sharing the pair needs
   * the same key; a pair that does not decrypt is ignored (and replaced by the next refresh).
   */
  readonly encryptionKey?: Redacted.Redacted<Uint8Array> | Redacted.Redacted<string> | undefined
  /** How long the refresh lock lives if its owner never releases it (it died): default 10 seconds. */
  readonly lockTtl?: Duration.DurationInput | undefined
  /** How often a process waiting for another's refresh looks at Redis again: default 25 ms. */
  readonly waitInterval?: Duration.DurationInput | undefined
}

// Short field names: the pair is read on every refresh by every process.
const Stored = Schema.parseJson(Schema.Struct({
  a: Schema.String,
  r: Schema.Number,
  t: Schema.optional(Schema.String),
  u: Schema.optional(Schema.Number)
}))
const encodeStored = Schema.encodeSync(Stored)
const decodeStored = Schema.decodeUnknownEither(Stored)

const setPair = Connection.script(`
redis.call('HSET', KEYS[1], 'fp', ARGV[1], 'v', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`)

const clearPair = Connection.script(`
if redis.call('HGET', KEYS[1], 'fp') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

const unlock = Connection.script(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

const ENCRYPTED = "e1:"

const keyBytes = (key: Redacted.Redacted<Uint8Array> | Redacted.Redacted<string>): Uint8Array<ArrayBuffer> => {
  const value = Redacted.value<Uint8Array | string>(key)
  // A copy: the key material is the caller's, and WebCrypto wants its own ArrayBuffer.
  return typeof value === "string" ? new Uint8Array(Buffer.from(value, "base64")) : new Uint8Array(value)
}

const importKey = (key: Redacted.Redacted<Uint8Array> | Redacted.Redacted<string>) =>
  Effect.gen(function*() {
    const bytes = keyBytes(key)
    if (![16, 24, 32].includes(bytes.length)) {
      return yield* new TokenStore.TokenStoreError({
        operation: "configure",
        message: `encryptionKey must be 16, 24 or 32 bytes (raw or base64), not ${bytes.length}`
      })
    }
    return yield* Effect.promise(() =>
      globalThis.crypto.subtle.importKey("raw", bytes, { name: "AES-GCM" }, false, ["encrypt", "decrypt"])
    )
  })

/**
 * Connects (or borrows `options.client`) for the life of the scope. Fails only on an invalid `encryptionKey`; an
 * unreachable Redis is not an error here (the provider works around it until Redis is back).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: Options = {}
): Effect.Effect<TokenStore.Service, TokenStore.TokenStoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const cryptoKey = options.encryptionKey === undefined ? undefined : yield* importKey(options.encryptionKey)
    const lockTtl = Math.max(1, Math.round(Duration.toMillis(options.lockTtl ?? Duration.seconds(10))))
    const redis = yield* Connection.connect(options)
    const pairKey = (key: string) => `${redis.prefix}:token:${key}`
    const lockKey = (key: string) => `${redis.prefix}:token-lock:${key}`
    const failed = (failure: Connection.Failure) => new TokenStore.TokenStoreError(failure)
    // The key name is authenticated with the data: a pair copied under another client's key does not decrypt.
    const gcm = (name: string, iv: Uint8Array) => ({ name: "AES-GCM", iv, additionalData: new TextEncoder().encode(name) })

    const seal = (name: string, text: string): Effect.Effect<string> =>
      cryptoKey === undefined ? Effect.succeed(text) : Effect.promise(async () => {
        const iv = globalThis.crypto.getRandomValues(new Uint8Array(12))
        const sealed = await globalThis.crypto.subtle.encrypt(gcm(name, iv), cryptoKey, new TextEncoder().encode(text))
        return ENCRYPTED + Buffer.concat([iv, new Uint8Array(sealed)]).toString("base64")
      })

    const open = (name: string, value: string): Effect.Effect<Option.Option<string>> => {
      if (!value.startsWith(ENCRYPTED)) return Effect.succeed(cryptoKey === undefined ? Option.some(value) : Option.none())
      if (cryptoKey === undefined) return Effect.succeed(Option.none())
      const bytes = Buffer.from(value.slice(ENCRYPTED.length), "base64")
      return Effect.tryPromise(() =>
        globalThis.crypto.subtle.decrypt(gcm(name, bytes.subarray(0, 12)), cryptoKey, bytes.subarray(12))
      ).pipe(Effect.map((plain) => Option.some(new TextDecoder().decode(plain))), Effect.orElseSucceed(Option.none))
    }

    const unreadable = (reason: string) =>
      Effect.as(
        Effect.logWarning(`effect-fin: the token pair in Redis is ${reason}; ignoring it until the next refresh`),
        Option.none<TokenStore.Tokens>()
      )

    const get: TokenStore.Service["get"] = (key) =>
      Effect.gen(function*() {
        const [, value] = yield* redis.run("get", (client) => client.hmget(pairKey(key), "fp", "v"))
        if (value === null || value === undefined) return Option.none()
        const text = yield* open(pairKey(key), value)
        if (Option.isNone(text)) {
          return yield* unreadable(cryptoKey === undefined ? "encrypted (no encryptionKey given)" : "not decryptable with this key")
        }
        const decoded = decodeStored(text.value)
        if (Either.isLeft(decoded)) return yield* unreadable("malformed")
        const { a, r, t, u } = decoded.right
        return Option.some<TokenStore.Tokens>({
          accessToken: Redacted.make(a),
          refreshAt: r,
          ...(t !== undefined && u !== undefined ? { refreshToken: Redacted.make(t), refreshUsableUntil: u } : {})
        })
      }).pipe(Effect.mapError(failed))

    const set: TokenStore.Service["set"] = (key, tokens) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        // Kept while either token is of use, then Redis drops it.
        const ttl = Math.max(1000, Math.max(tokens.refreshAt, tokens.refreshUsableUntil ?? 0) - now)
        const value = yield* seal(pairKey(key), encodeStored({
          a: Redacted.value(tokens.accessToken),
          r: tokens.refreshAt,
          ...(tokens.refreshToken !== undefined && tokens.refreshUsableUntil !== undefined
            ? { t: Redacted.value(tokens.refreshToken), u: tokens.refreshUsableUntil }
            : {})
        }))
        yield* redis.eval("set", setPair, [pairKey(key)], [Connection.sha256(Redacted.value(tokens.accessToken)), value, Math.round(ttl)])
      }).pipe(Effect.mapError(failed))

    const clear: TokenStore.Service["clear"] = (key, accessToken) =>
      Effect.mapError(
        redis.eval("clear", clearPair, [pairKey(key)], [Connection.sha256(Redacted.value(accessToken))]),
        failed
      ).pipe(Effect.asVoid)

    const lock: TokenStore.Service["lock"] = (key) => {
      const owner = globalThis.crypto.randomUUID()
      return redis.run("lock", (client) => client.set(lockKey(key), owner, "PX", lockTtl, "NX")).pipe(
        Effect.map((reply) => reply === "OK" ? Option.some(owner) : Option.none()),
        Effect.mapError(failed)
      )
    }

    const release: TokenStore.Service["unlock"] = (key, owner) =>
      Effect.mapError(redis.eval("unlock", unlock, [lockKey(key)], [owner]), failed).pipe(Effect.asVoid)

    return {
      get,
      set,
      clear,
      lock,
      unlock: release,
      waitInterval: Duration.decode(options.waitInterval ?? Duration.millis(25))
    }
  })

/**
 * Provides the store to `TokenProvider` (e.g. `FinClient.layer(options).pipe(Layer.provide(RedisTokenStore.layer(...)))`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<TokenStore.TokenStore, TokenStore.TokenStoreError> =>
  Layer.scoped(TokenStore.TokenStore, make(options))
